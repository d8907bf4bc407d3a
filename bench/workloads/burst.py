"""A load burst, as a replayable trace: unique one-shot prompts at a base rate, then twice
what the fleet can serve for a minute, then the base rate again.

It measures flow control under overload: whether every request is served within its SLO,
refused (429 + Retry-After) or moved to a fallback before its TTFT deadline, and how soon
goodput recovers once the burst ends (`--timeline-s` of `bench.replay`, docs/replay.md,
"Overload and recovery"). Prompts are unique.py's (500-6,000 tokens after a one-line
system prompt too short to be a hit), so no cache can absorb the burst. Arrivals are a
Poisson process whose rate is `base_rate_per_s` for `before_s`, `burst_rate_per_s` for
`burst_s`, then `base_rate_per_s` for `after_s`; the meta line records `burst_start_s`
and `burst_end_s` in nominal trace seconds.

Load arithmetic (terms as in the docstring of `bench.workloads.catalog`; the calibrated
fleet: 4 engines, prefill 4,000 tokens/s each, decode 15 ms + 0.5 ms per sequence): a
prompt is the 29-byte system line, a 25-byte ticket and 500-6,000 tokens of text,
3,264 tokens on average (3,188 to 3,275 over seeds 1-3), none of it reused. The fleet
prefills 16,000 tokens/s: 16,000 / 3,264 ≈ 4.9 requests/s. With the per-sequence decode
cost (~165 output tokens x 0.5 ms ≈ 0.08 s of engine time beside 0.82 s of prefill) it
finishes at most 4 / 0.90 ≈ 4.45 requests/s.

- Base, 3 req/s (the unique cell's rate): ~9,800 uncached tokens/s, 61 % of the prefill
  capacity; decode 6 %; busy ≈ 67 %, TPOT ≈ 15 ms / 0.33 ≈ 46 ms.
- Burst, 9.8 req/s: ~32,000 tokens/s, 2.0 x the prefill capacity (2.2 x what the fleet can
  finish). Served in full, the backlog grows by (9.8 - 4.45) x 60 ≈ 320 requests, some
  70 s of the whole fleet's time, and the base load leaves ~1.45 req/s to drain it: about
  220 s, longer than the 90 s after the burst. Refusing or moving what cannot start in
  time keeps that backlog from forming.
- Requests: 60 x 3 + 60 x 9.8 + 90 x 3 ≈ 1,038 (1,071, 1,013 and 1,004 for seeds 1-3:
  221, 170 and 181 of them in the first minute, so seed 1's base runs at ~3.7 req/s, 75 %
  of the prefill capacity); nominal span 210 s, 52 s of replay at time scale 0.25.

    python -m bench.workloads.burst --out /tmp/burst.jsonl
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.workloads.builder import TraceBuilder, piecewise_poisson_starts, seeded, write_lines
from bench.workloads.unique import SYSTEM, SYSTEM_LINE, one_shot_prompt


@dataclass(frozen=True)
class BurstShape:
    seed: int = 1
    base_rate_per_s: float = 3.0
    burst_rate_per_s: float = 9.8
    before_s: float = 60.0
    burst_s: float = 60.0
    after_s: float = 90.0
    prompt_tokens: tuple[int, int] = (500, 6000)
    output_tokens: tuple[int, int] = (30, 300)

    def __post_init__(self) -> None:
        for name in ("base_rate_per_s", "burst_rate_per_s", "before_s", "burst_s", "after_s"):
            if not getattr(self, name) >= 0:  # NaN fails too
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    @property
    def burst_start_s(self) -> float:
        return self.before_s

    @property
    def burst_end_s(self) -> float:
        return self.before_s + self.burst_s

    def phases(self) -> list[tuple[float, float]]:
        """(duration s, requests/s) of before, burst and after, in order."""
        return [
            (self.before_s, self.base_rate_per_s),
            (self.burst_s, self.burst_rate_per_s),
            (self.after_s, self.base_rate_per_s),
        ]


def lines(shape: BurstShape) -> Iterator[dict[str, Any]]:
    """The meta line, then segments before first use and requests in dispatch order."""
    # Arrivals and prompts draw apart, so a change of rates keeps request i's prompt.
    starts = piecewise_poisson_starts(seeded(shape.seed, "arrivals"), shape.phases())
    rng = seeded(shape.seed, "prompts")
    builder = TraceBuilder()
    builder.segment(SYSTEM, SYSTEM_LINE)
    for i in range(len(starts)):
        builder.segment(f"burst-{i}", one_shot_prompt(rng, shape.prompt_tokens))
        messages = [("system", (SYSTEM,)), ("user", (f"burst-{i}",))]
        builder.request(f"burst-r{i}", f"burst-{i}", messages, rng.randint(*shape.output_tokens))
    builder.start_roots(starts)
    meta = {
        "name": f"burst-seed{shape.seed}",
        "description": (
            f"unique one-shot prompts of 500-6,000 tokens, Poisson arrivals: "
            f"{shape.base_rate_per_s:g} req/s for {shape.before_s:g} s, "
            f"{shape.burst_rate_per_s:g} req/s for {shape.burst_s:g} s, "
            f"{shape.base_rate_per_s:g} req/s for {shape.after_s:g} s"
        ),
        "family": "burst",
        "seed": shape.seed,
        "base_rate_per_s": shape.base_rate_per_s,
        "burst_rate_per_s": shape.burst_rate_per_s,
        "before_s": shape.before_s,
        "burst_s": shape.burst_s,
        "after_s": shape.after_s,
        "burst_start_s": shape.burst_start_s,
        "burst_end_s": shape.burst_end_s,
    }
    yield from builder.lines(meta)


def main(argv: Sequence[str] | None = None) -> int:
    defaults = BurstShape()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="trace file to write")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--base-rate", type=float, default=defaults.base_rate_per_s,
                        help="requests/s before and after the burst")  # fmt: skip
    parser.add_argument("--burst-rate", type=float, default=defaults.burst_rate_per_s,
                        help="requests/s during the burst")  # fmt: skip
    parser.add_argument("--before-s", type=float, default=defaults.before_s)
    parser.add_argument("--burst-s", type=float, default=defaults.burst_s)
    parser.add_argument("--after-s", type=float, default=defaults.after_s)
    args = parser.parse_args(argv)
    try:
        shape = BurstShape(
            seed=args.seed,
            base_rate_per_s=args.base_rate,
            burst_rate_per_s=args.burst_rate,
            before_s=args.before_s,
            burst_s=args.burst_s,
            after_s=args.after_s,
        )
    except ValueError as exc:
        parser.error(str(exc))
    write_lines(args.out, lines(shape))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

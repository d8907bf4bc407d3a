"""The workload matrix's cells, as data: a name, a family, and how to make its trace.

Every cell is one generator with fixed parameters; a trace of it is made for a seed and a
length (`requests`: ~1,200 for a full cell, ~200 in CI). Rates are requests per second of
nominal trace time, chosen for the calibrated fleet of docs/replay.md (4 engines of 100,000
KV tokens, prefill 4,000 tokens/s, decode 15 ms + 0.5 ms per sequence), as below; each
generator's docstring has its own arithmetic.

Load: each engine's time goes to prefill (1/4,000 s per uncached prompt token) and to the
per-sequence decode cost (0.5 ms per output token); decode steps share what is left (15 ms
each), so TPOT ≈ 15 ms / (1 - busy), busy = prefill share + decode share. Rates put busy
near 0.7 (TPOT ~50 ms, under the 60 ms SLO) under a good cache-aware router, whose reuse is
taken as the offline bounded longest-prefix router's hit ratio over the 4 x 100,000-token
fleet. For sessions (agent, chat, mix) that is at the live pace, every response taking 15 s
(docs/replay.md measured 17 s at the calibrated load): a turn waits for its parent, the span
stretches and caches turn over in between. That arithmetic gives a prefill share of 66-68 %
(responses of 15-17 s) on mixed-public.jsonl at its calibrated setting, where the live run
measured 68 %; with responses taking no time it would say 28 %. Chat is the exception, a
light cell (see its docstring). The estimates per cell:

    python -m bench.workloads.load_estimate --seed 1 --requests 1200
    python -m bench.workloads.catalog --out /tmp/matrix --requests 1200   # write traces
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from bench.workloads import agent_sessions, chat, doc_qa, mix, unique
from bench.workloads.builder import write_lines

SEEDS: tuple[int, ...] = (1, 2, 3)
"""Seeds every cell runs with by default; a trace is deterministic for its seed."""

Shape = TypeVar(
    "Shape",
    agent_sessions.AgentShape,
    chat.ChatShape,
    doc_qa.DocQaShape,
    unique.UniqueShape,
    mix.MixShape,
)
Generate = Callable[[int, int], Iterator[dict[str, Any]]]


@dataclass(frozen=True)
class Workload:
    """One cell of the matrix."""

    name: str
    """kebab-case, e.g. "doc-qa-z1.2-spills"."""
    family: str
    """agent | chat | doc-qa | unique | mix"""
    description: str
    generate: Generate = field(repr=False, compare=False)

    def lines(self, seed: int, requests: int) -> Iterator[dict[str, Any]]:
        """The trace's lines: meta, then segments before first use and requests."""
        return self.generate(seed, requests)

    def write(self, path: Path, seed: int, requests: int) -> Path:
        """Write the trace to `path` as JSON Lines; returns `path`."""
        return write_lines(path, self.lines(seed, requests))


def _generator(lines: Callable[[Shape], Iterator[dict[str, Any]]], shape: Shape) -> Generate:
    def generate(seed: int, requests: int) -> Iterator[dict[str, Any]]:
        return lines(replace(shape, seed=seed, requests=requests))

    return generate


# Documents that fit in the fleet's KV (40 of 5-10K tokens, ~300K of 400K) or do not
# (150, ~1.1M). Rates: busy ≈ 0.7 at each cell's own hit ratio h (see doc_qa's docstring).
_DOC_QA_RATES: dict[tuple[float, str], float] = {
    (0.8, "fits"): 13.0,
    (0.8, "spills"): 3.3,
    (1.2, "fits"): 13.0,
    (1.2, "spills"): 5.5,
    (1.6, "fits"): 13.0,
    (1.6, "spills"): 9.7,
}
_SIZINGS = {"fits": (40, "~300K tokens, fit in"), "spills": (150, "~1.1M tokens, spill out of")}


def _doc_qa_cells() -> list[Workload]:
    cells = []
    for (zipf, sizing), rate in _DOC_QA_RATES.items():
        documents, fit = _SIZINGS[sizing]
        shape = doc_qa.DocQaShape(rate_per_s=rate, documents=documents, zipf=zipf)
        description = (
            f"questions over {documents} documents of 5-10K tokens ({fit} the fleet's KV), "
            f"Zipf {zipf:g}, {shape.one_shot_share:.0%} one-shot prompts, {rate:g} req/s"
        )
        generate = _generator(doc_qa.lines, shape)
        cells.append(Workload(f"doc-qa-z{zipf:g}-{sizing}", "doc-qa", description, generate))
    return cells


def _catalog() -> Mapping[str, Workload]:
    agent = agent_sessions.AgentShape()
    conversations = chat.ChatShape()
    one_shot = unique.UniqueShape()
    mixed = mix.MixShape()
    cells = [
        Workload(
            "agent",
            "agent",
            "coding-agent sessions with sub-agent fan-out, 6-16K-token contexts, "
            f"{agent.rate_per_s:g} req/s",
            _generator(agent_sessions.lines, agent),
        ),
        Workload(
            "chat",
            "chat",
            "multi-turn chat, 2-12 turns, a few shared system prompts, "
            f"{conversations.rate_per_s:g} req/s",
            _generator(chat.lines, conversations),
        ),
        *_doc_qa_cells(),
        Workload(
            "unique",
            "unique",
            f"unique one-shot prompts of 500-6,000 tokens, {one_shot.rate_per_s:g} req/s",
            _generator(unique.lines, one_shot),
        ),
        Workload(
            "mix",
            "mix",
            f"agent 35%, chat 25%, doc QA 25%, unique 15% of requests, {mixed.rate_per_s:g} req/s",
            _generator(mix.lines, mixed),
        ),
    ]
    return MappingProxyType({cell.name: cell for cell in cells})


CATALOG: Mapping[str, Workload] = _catalog()
"""Every cell by name, read-only, in a stable order."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for the traces")
    parser.add_argument("--requests", type=int, default=1200)
    parser.add_argument("--seeds", default=",".join(str(s) for s in SEEDS))
    parser.add_argument("--cells", default=",".join(CATALOG), help="comma-separated names")
    args = parser.parse_args(argv)
    unknown = [name for name in args.cells.split(",") if name not in CATALOG]
    if unknown:
        parser.error(f"unknown cell(s) {', '.join(unknown)}; known: {', '.join(CATALOG)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.cells.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            path = args.out / f"{name}-seed{seed}.jsonl"
            CATALOG[name].write(path, seed, args.requests)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

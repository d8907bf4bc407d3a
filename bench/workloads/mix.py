"""A mix of the four families in one trace, like `mixed-public.jsonl`.

Each family's own generator makes its share of the requests at its share of the mix's rate;
their ids (requests, segments, sessions) get a family prefix so that they cannot collide,
and the builder merges them in dispatch order. Shares by request count follow the public
trace's: agent 35 %, chat 25 %, document QA 25 % (40 documents that fit in the fleet's KV,
Zipf 1.2), unique 15 %.

Load arithmetic (1,200 requests: `python -m bench.workloads.load_estimate`; terms as in the
docstring of `bench.workloads.catalog`): sessions start at 17.5 requests/s for ~70 s, the
one-shot families keep arriving for 120 s more while sessions run; prompts average ~7,000
tokens. With responses taking 15 s the span is 376 s (seed 1) and the offline bounded
longest-prefix router reuses 61.8 %: ~8,500 uncached tokens/s, 53 % prefill, 8 % decode,
busy ~61 % on average (seeds 2 and 3: 78 % and 63 %) and ~110-130 % prefill in the busiest
minute. The same arithmetic on `mixed-public.jsonl` at its calibrated setting gives 66 % and
106 %: the tails of chat conversations, longer than the public trace's, dilute the average.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bench.workloads import agent_sessions, chat, doc_qa, unique
from bench.workloads.builder import TraceBuilder

PREFIXES = {"agent": "A.", "chat": "C.", "doc-qa": "D.", "unique": "U."}
ONE_SHOT_FAMILIES = ("doc-qa", "unique")


@dataclass(frozen=True)
class MixShape:
    seed: int = 1
    requests: int = 1200
    rate_per_s: float = 17.5
    """Requests per second of nominal time, all families together, while sessions start."""
    one_shot_tail_s: float = 120.0
    """How much longer than sessions start the one-shot families (doc QA, unique) keep
    arriving, at a rate lower to match, while sessions run their turns."""
    shares: tuple[tuple[str, float], ...] = (
        ("agent", 0.35),
        ("chat", 0.25),
        ("doc-qa", 0.25),
        ("unique", 0.15),
    )


def lines(shape: MixShape) -> Iterator[dict[str, Any]]:
    """The meta line, then segments before first use and requests in dispatch order."""
    builder = TraceBuilder()
    starts: list[float] = []
    for family, requests in _counts(shape).items():
        if requests == 0:
            continue
        rate = shape.rate_per_s * requests / shape.requests
        if family in ONE_SHOT_FAMILIES:
            window_s = shape.requests / shape.rate_per_s
            rate *= window_s / (window_s + shape.one_shot_tail_s)
        for line in _family_lines(family, shape.seed, requests, rate):
            _add(builder, PREFIXES[family], line, starts)
    builder.start_roots(starts)
    shares = ", ".join(f"{family} {share:.0%}" for family, share in shape.shares)
    meta = {
        "name": f"mix-seed{shape.seed}",
        "description": f"a mix of workload families by request count: {shares}",
        "family": "mix",
        "seed": shape.seed,
        "rate_per_s": shape.rate_per_s,
    }
    yield from builder.lines(meta)


def _counts(shape: MixShape) -> dict[str, int]:
    """Requests per family: its share, rounded, the last family taking what is left."""
    counts: dict[str, int] = {}
    for family, share in shape.shares[:-1]:
        counts[family] = round(shape.requests * share)
    last = shape.shares[-1][0]
    counts[last] = max(0, shape.requests - sum(counts.values()))
    return counts


def _family_lines(family: str, seed: int, requests: int, rate: float) -> Iterator[dict[str, Any]]:
    if family == "agent":
        return agent_sessions.lines(
            agent_sessions.AgentShape(seed=seed, requests=requests, rate_per_s=rate)
        )
    if family == "chat":
        return chat.lines(chat.ChatShape(seed=seed, requests=requests, rate_per_s=rate))
    if family == "doc-qa":
        return doc_qa.lines(
            doc_qa.DocQaShape(seed=seed, requests=requests, rate_per_s=rate, documents=40)
        )
    if family == "unique":
        return unique.lines(unique.UniqueShape(seed=seed, requests=requests, rate_per_s=rate))
    raise ValueError(f"unknown family {family!r} (expected one of {', '.join(PREFIXES)})")


def _add(builder: TraceBuilder, prefix: str, line: dict[str, Any], starts: list[float]) -> None:
    """Add one of a family's lines under `prefix`; a root's start goes to `starts`."""
    if line["kind"] == "segment":
        builder.segment(prefix + line["id"], line["text"])
    if line["kind"] != "request":
        return
    messages = [(m["role"], [prefix + s for s in m["content"]]) for m in line["messages"]]
    tools = line.get("tools")
    parent = line.get("parent")
    builder.request(
        prefix + line["id"],
        prefix + line["session"],
        messages,
        line["max_tokens"],
        parent=None if parent is None else prefix + parent,
        after_s=line.get("after"),
        tools=None if tools is None else prefix + tools,
    )
    if parent is None:
        starts.append(line["start"])

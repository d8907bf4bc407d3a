"""Assembles a synthetic trace: segments and requests in, trace lines out in dispatch order.

Generators add requests in whatever order suits them (a whole session at a time); the
builder yields them in nominal dispatch order (roots at `start`, a child `after` its parent,
as if responses took no time; ties in the order added), each segment on the line before the
first request that uses it, so the trace reads forward in time and the first N requests of
it are a sensible shorter trace. Also the pieces every generator shares: Poisson start
times, random generators seeded per entity, writing JSON Lines.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.workloads.shared_prefix import BYTES_PER_TOKEN

Messages = Sequence[tuple[str, Sequence[str]]]
"""(role, segment ids) per message."""


def seeded(seed: int, *names: object) -> random.Random:
    """A generator of its own for one entity (a document, a session), so that its text
    does not depend on what was drawn before it."""
    return random.Random(":".join(str(n) for n in (seed, *names)))


def poisson_starts(rng: random.Random, count: int, rate_per_s: float) -> list[float]:
    """`count` arrival times (s) of a Poisson process of `rate_per_s`, rounded to ms."""
    starts, at = [], 0.0
    for _ in range(count):
        at += rng.expovariate(rate_per_s)
        starts.append(round(at, 3))
    return starts


def piecewise_poisson_starts(
    rng: random.Random, phases: Sequence[tuple[float, float]]
) -> list[float]:
    """Arrival times (s, rounded to ms) of a Poisson process whose rate changes: each phase
    is (duration s, requests/s), one after the other from 0; a rate of 0 sends nothing."""
    starts: list[float] = []
    begin = 0.0
    for duration_s, rate_per_s in phases:
        end = begin + duration_s
        # Memoryless: drawing afresh from a phase's start loses nothing at the boundary.
        at = begin + rng.expovariate(rate_per_s) if rate_per_s > 0 else end
        while at < end:
            starts.append(round(at, 3))
            at += rng.expovariate(rate_per_s)
        begin = end
    return starts


def write_lines(path: Path, lines: Iterator[dict[str, Any]]) -> Path:
    """Write trace lines as JSON Lines; returns `path`."""
    with path.open("wb") as out:
        for line in lines:
            out.write(orjson.dumps(line) + b"\n")
    return path


@dataclass
class TraceBuilder:
    """Segments by id, and requests as added (roots also apart, to be given start times)."""

    texts: dict[str, str] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    roots: list[dict[str, Any]] = field(default_factory=list)

    def segment(self, segment_id: str, text: str) -> str:
        """Register a segment once (a second registration keeps the first); returns its id."""
        self.texts.setdefault(segment_id, text)
        return segment_id

    def segment_made(self, segment_id: str, make: Callable[[], str]) -> str:
        """Register a segment made by `make()` unless it exists already; returns its id."""
        if segment_id not in self.texts:
            self.texts[segment_id] = make()
        return segment_id

    def request(
        self,
        request_id: str,
        session: str,
        messages: Messages,
        max_tokens: int,
        *,
        parent: str | None = None,
        after_s: float | None = None,
        tools: str | None = None,
    ) -> str:
        """Add a request: a root (its start set later by `start_roots`) or, with `parent`
        and `after_s`, a follow-up of an earlier request; returns its id."""
        line: dict[str, Any] = {
            "kind": "request",
            "id": request_id,
            "session": session,
            "model": "default",
            "messages": [{"role": role, "content": list(ids)} for role, ids in messages],
        }
        if tools is not None:
            line["tools"] = tools
        line |= {"max_tokens": max_tokens, "stream": True}
        if parent is None:
            self.roots.append(line)
        else:
            assert after_s is not None, "a follow-up needs an `after`"
            line |= {"parent": parent, "after": round(after_s, 3)}
        self.requests.append(line)
        return request_id

    def start_roots(self, starts_s: Sequence[float]) -> None:
        """Give the roots, in the order added, these start times (s)."""
        assert len(starts_s) == len(self.roots), "one start per root"
        for line, start_s in zip(self.roots, starts_s, strict=True):
            line["start"] = round(start_s, 3)

    def prompt_tokens(self, messages: Messages, tools: str | None = None) -> int:
        """A prompt's size in tokens, the tools' JSON included."""
        size = sum(len(self.texts[s]) for _, ids in messages for s in ids)
        return (size + (len(self.texts[tools]) if tools else 0)) // BYTES_PER_TOKEN

    def lines(self, meta: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The meta line (its `requests` set), then segments and requests in dispatch order."""
        yield {"kind": "meta", **meta, "requests": len(self.requests)}
        due_s: dict[str, float] = {}
        for line in self.requests:  # a parent is always added before its children
            parent = line.get("parent")
            due_s[line["id"]] = line["start"] if parent is None else due_s[parent] + line["after"]
        order = sorted(range(len(self.requests)), key=lambda i: (due_s[self.requests[i]["id"]], i))
        sent: set[str] = set()
        for i in order:
            request = self.requests[i]
            used = [s for m in request["messages"] for s in m["content"]]
            for segment_id in [*([request["tools"]] if "tools" in request else []), *used]:
                if segment_id not in sent:
                    sent.add(segment_id)
                    yield {"kind": "segment", "id": segment_id, "text": self.texts[segment_id]}
            yield request

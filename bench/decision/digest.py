"""A digest of seeded routing decisions: to show that a change of layout changed none.

Usage (one tree's decisions; compare the digests of two trees):
    PYTHONSAFEPATH=1 PYTHONPATH=<tree> python bench/decision/digest.py [--out FILE]

Runs `bench.decision`'s workload of the tree it is pointed at (seeded conversations on 16
backends, the cache-aware profile, dispatches remembered and the fleet kept busy as
dispatch would) and writes every decision as `describe_decision` renders it, less what is
meant to differ between runs (the random id, timings, the creation time), one JSON line
per decision, then prints the SHA-256 of those lines. Decision ids seed the pickers' tie
breaks; here they come from one seeded byte stream in place of `os.urandom` (`SeededBytes`),
so a run is repeatable. It imports only names that
`bench.decision` has kept across layouts, so an older checkout is digested by its own
code (before the bench's own layout step, `bench.decision` was one module beside
`bench.decision_workload`; both layouts are read). Two trees whose digests match routed
every request of the workload alike, with the same order, scores and reasons.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from policies import describe_decision  # the tree's own: both layouts export it here


def _workload() -> tuple[ModuleType, ModuleType]:
    """The tree's decision bench and its workload, in either layout."""
    try:
        return importlib.import_module("bench.decision.cli"), importlib.import_module(
            "bench.decision.workload"
        )
    except ModuleNotFoundError:
        return importlib.import_module("bench.decision"), importlib.import_module(
            "bench.decision_workload"
        )


SEED = 20261207

VARYING = ("id", "timings_us", "total_us", "created_at")
"""What `describe_decision` gives that differs between runs of the same decisions."""


class SeededBytes:
    """One seeded byte stream, however it is asked for: ids drawn 8 bytes at a time or from
    a pool of 4,096 come out the same, so trees that draw them differently compare."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._buffer = b""

    def take(self, n: int) -> bytes:
        while len(self._buffer) < n:
            self._buffer += self._rng.randbytes(4096)
        taken, self._buffer = self._buffer[:n], self._buffer[n:]
        return taken


def digest_lines(prompt_tokens: int, requests: int) -> list[str]:
    """Every decision of `requests` seeded turns, as canonical JSON lines."""
    decision, workload = _workload()
    os.urandom = SeededBytes(SEED).take  # this process only: ids and tie breaks
    args = decision.parse_args(["--prompt-tokens", str(prompt_tokens)])
    config = workload.fleet_config(args.backends, args.capacity_tokens)
    bench = decision.Bench.build(config, args)
    cpt = workload.chars_per_token(bench.fingerprinter.counter)
    factory = workload.ConversationFactory(prompt_tokens, args.turns, cpt, args.seed)
    active = [factory.start(i) for i in range(args.sessions)]
    started, lines = len(active), []
    while len(lines) < requests:
        for i, conversation in enumerate(active):
            body = workload.chat_body(conversation, bench.max_tokens)
            lines.append(_decided(bench, body, f"c-{i}"))
            if not factory.advance(conversation):
                active[i] = factory.start(started)
                started += 1
    return lines[:requests]


def _decided(bench: Any, raw: bytes, client: str) -> str:
    bench.load.finish(client)
    leg = bench.router.decide(bench.route, bench.traits(raw))
    chosen = leg.decision.chosen
    if chosen is not None:
        bench.router.remember(chosen, leg.work)
        bench.load.dispatch(client, chosen, leg.work.uncached(chosen))
    shown: dict[str, Any] = describe_decision(leg.decision)
    for key in VARYING:
        shown.pop(key, None)
    return json.dumps(shown, sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt-tokens", type=int, default=8192)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--out", type=Path, help="write the JSON lines here")
    args = parser.parse_args(argv)
    lines = digest_lines(args.prompt_tokens, args.requests)
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text)
    print(f"{len(lines)} decisions sha256 {hashlib.sha256(text.encode()).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

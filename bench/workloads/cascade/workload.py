"""Cascade workloads from a seed: one kind, or a mix; as records or JSON Lines.

Request ``i`` of a kind is drawn from a generator of its own (seed, kind, i), so the first
N requests of a longer workload are the shorter one, and a mixed workload's requests of a
kind do not depend on the others'. A mix draws each request's kind (seed, "mix", i).

    python -m bench.workloads.cascade --kind mixed --count 200 --seed 1 --out /tmp/c.jsonl

``grade`` (``records.py``) needs only a record and an answer: ``answer_of(response)`` turns a
chat completion into one.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import orjson

from bench.workloads.builder import seeded, write_lines
from bench.workloads.cascade import extraction, short_questions, tool_calls
from bench.workloads.cascade.records import HARD_KIND, KINDS, CascadeRequest, Kind

DEFAULT_MODEL = "cascade"
"""The ``model`` of every body unless asked otherwise: a route's name at the gateway."""

Build = Callable[[random.Random, str, str], CascadeRequest]
BUILDERS: dict[Kind, Build] = {
    "extraction": extraction.request,
    "tools": tool_calls.request,
    "short": short_questions.request,
    "nested-extraction": extraction.nested_request,
}


def requests(
    kind: Kind, seed: int, count: int, *, model: str = DEFAULT_MODEL
) -> list[CascadeRequest]:
    """``count`` requests of ``kind``, the same for the same seed."""
    return [_one(kind, seed, index, model) for index in range(count)]


def mixed(
    seed: int,
    count: int,
    *,
    kinds: Sequence[Kind] = KINDS,
    weights: Sequence[float] | None = None,
    model: str = DEFAULT_MODEL,
) -> list[CascadeRequest]:
    """``count`` requests, each of a kind drawn from ``kinds`` (by ``weights``, else evenly);
    ``kinds=(*KINDS, HARD_KIND)`` adds the always-hard kind."""
    if not kinds or (weights is not None and len(weights) != len(kinds)):
        raise ValueError("kinds must be given, and as many weights as kinds")
    drawn = [seeded(seed, "mix", index).choices(kinds, weights)[0] for index in range(count)]
    return [_one(kind, seed, index, model) for index, kind in enumerate(drawn)]


def _one(kind: Kind, seed: int, index: int, model: str) -> CascadeRequest:
    return BUILDERS[kind](seeded(seed, kind, index), f"{kind}-{seed}-{index}", model)


def write(path: Path, records: Iterable[CascadeRequest]) -> Path:
    """The records as JSON Lines (``CascadeRequest.line``); returns ``path``."""
    return write_lines(path, (record.line() for record in records))


def read(path: Path) -> Iterator[CascadeRequest]:
    """The records of a file ``write`` wrote."""
    with path.open("rb") as lines:
        for line in lines:
            if line.strip():
                yield CascadeRequest.from_line(orjson.loads(line))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    choices = [*BUILDERS, "mixed", "mixed-hard"]
    parser.add_argument(
        "--kind", choices=choices, default="mixed", help=f"mixed-hard: with {HARD_KIND}"
    )
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.kind == "mixed":
        records = mixed(args.seed, args.count, model=args.model)
    elif args.kind == "mixed-hard":
        records = mixed(args.seed, args.count, kinds=(*KINDS, HARD_KIND), model=args.model)
    else:
        records = requests(args.kind, args.seed, args.count, model=args.model)
    write(args.out, records)
    print(f"wrote {args.out}")
    return 0

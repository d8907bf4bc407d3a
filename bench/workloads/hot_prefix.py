"""A trace where one shared prefix is far more popular than the rest, arriving over time.

Issue 3 asks for max/mean load ≤ 1.25 "also when one prefix is far more popular than the
rest": pure prefix affinity would pile that prefix's traffic onto one replica. Requests
arrive as a Poisson process; each uses the hot group's system prompt with probability
`hot_share`, otherwise one of the other groups' (uniformly), plus its own question.

    python -m bench.workloads.hot_prefix --out /tmp/hot-prefix.jsonl
    switchyard bench replay --trace /tmp/hot-prefix.jsonl --policies round-robin,cache-aware,sglang
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.workloads.shared_prefix import text_of_tokens


@dataclass(frozen=True)
class HotPrefixShape:
    requests: int = 960
    rate_per_s: float = 8.0
    groups: int = 32
    hot_share: float = 0.5
    prefix_tokens: int = 2048
    question_tokens: int = 128
    output_tokens: int = 128
    seed: int = 11


def lines(shape: HotPrefixShape) -> Iterator[dict[str, Any]]:
    rng = random.Random(shape.seed)
    yield {
        "kind": "meta",
        "name": f"hot-prefix-{shape.hot_share:g}",
        "description": (
            f"{shape.requests} requests at {shape.rate_per_s:g}/s (Poisson); "
            f"{shape.hot_share:.0%} share one system prompt, the rest spread over "
            f"{shape.groups - 1} others"
        ),
        "seed": shape.seed,
        "requests": shape.requests,
    }
    for g in range(shape.groups):
        text = f"Group {g}. " + text_of_tokens(rng, shape.prefix_tokens)
        yield {"kind": "segment", "id": f"sys-{g}", "text": text}
    at = 0.0
    for i in range(shape.requests):
        at += rng.expovariate(shape.rate_per_s)
        hot = rng.random() < shape.hot_share
        group = 0 if hot or shape.groups == 1 else rng.randrange(1, shape.groups)
        question = f"q-{i}"
        yield {
            "kind": "segment",
            "id": question,
            "text": text_of_tokens(rng, shape.question_tokens),
        }
        yield {
            "kind": "request",
            "id": f"r-{i}",
            "session": f"group-{group}",
            "model": "default",
            "messages": [
                {"role": "system", "content": [f"sys-{group}"]},
                {"role": "user", "content": [question]},
            ],
            "max_tokens": shape.output_tokens,
            "stream": True,
            "start": round(at, 3),
        }


def main(argv: Sequence[str] | None = None) -> int:
    defaults = HotPrefixShape()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=defaults.requests)
    parser.add_argument("--rate", type=float, default=defaults.rate_per_s, help="requests/s")
    parser.add_argument("--groups", type=int, default=defaults.groups)
    parser.add_argument("--hot-share", type=float, default=defaults.hot_share)
    parser.add_argument("--prefix-tokens", type=int, default=defaults.prefix_tokens)
    parser.add_argument("--question-tokens", type=int, default=defaults.question_tokens)
    parser.add_argument("--output-tokens", type=int, default=defaults.output_tokens)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    args = parser.parse_args(argv)
    shape = HotPrefixShape(
        args.requests,
        args.rate,
        args.groups,
        args.hot_share,
        args.prefix_tokens,
        args.question_tokens,
        args.output_tokens,
        args.seed,
    )
    with args.out.open("wb") as out:
        for line in lines(shape):
            out.write(orjson.dumps(line) + b"\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

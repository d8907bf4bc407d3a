"""SGLang's shared-prefix benchmark shape as a replayable trace.

Groups of requests share a long system prompt and differ in a short question; every
request is sent at once. Defaults follow SGLang's router benchmark: 64 groups of 16
requests, a 2,048-token shared prompt, a 128-token question, 256 output tokens.

    python -m bench.workloads.shared_prefix --out /tmp/shared-prefix.jsonl
    switchyard bench replay --trace /tmp/shared-prefix.jsonl --fleet-size 8
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

BYTES_PER_TOKEN = 4
_WORDS = [
    "cache",
    "prefix",
    "engine",
    "replica",
    "router",
    "token",
    "batch",
    "decode",
    "prefill",
    "latency",
    "request",
    "model",
    "answer",
    "question",
    "context",
    "system",
    "memory",
    "block",
    "policy",
    "score",
    "load",
    "queue",
]


def text_of_tokens(rng: random.Random, tokens: int) -> str:
    """Roughly `tokens` tokens of words (4 bytes per token, as the emulator counts)."""
    target = tokens * BYTES_PER_TOKEN
    words: list[str] = []
    size = 0
    while size < target:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:target]


def lines(
    groups: int, per_group: int, prefix_tokens: int, question_tokens: int, output_tokens: int
) -> Iterator[dict[str, Any]]:
    rng = random.Random(7)
    total = groups * per_group
    yield {
        "kind": "meta",
        "name": f"shared-prefix-{groups}x{per_group}",
        "description": "SGLang router benchmark shape: shared system prompts, all at once",
        "seed": 7,
        "requests": total,
    }
    for g in range(groups):
        system = f"sys-{g}"
        yield {
            "kind": "segment",
            "id": system,
            "text": f"Group {g}. " + text_of_tokens(rng, prefix_tokens),
        }
        for i in range(per_group):
            question = f"q-{g}-{i}"
            yield {"kind": "segment", "id": question, "text": text_of_tokens(rng, question_tokens)}
            yield {
                "kind": "request",
                "id": f"r-{g}-{i}",
                "session": f"group-{g}",
                "model": "default",
                "messages": [
                    {"role": "system", "content": [system]},
                    {"role": "user", "content": [question]},
                ],
                "max_tokens": output_tokens,
                "stream": True,
                "start": 0.0,
            }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--groups", type=int, default=64)
    parser.add_argument("--per-group", type=int, default=16)
    parser.add_argument("--prefix-tokens", type=int, default=2048)
    parser.add_argument("--question-tokens", type=int, default=128)
    parser.add_argument("--output-tokens", type=int, default=256)
    args = parser.parse_args(argv)
    with args.out.open("wb") as out:
        for line in lines(
            args.groups,
            args.per_group,
            args.prefix_tokens,
            args.question_tokens,
            args.output_tokens,
        ):
            out.write(orjson.dumps(line) + b"\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

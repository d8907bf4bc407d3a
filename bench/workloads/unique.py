"""Unique one-shot prompts, as a replayable trace: nothing to reuse but one tiny line.

Each request is a root with its own prompt of 500-6,000 tokens after a one-line system
prompt shared by all (shorter than one KV block, so it is never a hit); arrivals are a
Poisson process of `rate_per_s`. A cache-aware router can gain nothing here; the matrix
checks that it loses nothing against least-load either.

Load arithmetic (1,200 requests: `python -m bench.workloads.load_estimate`; terms as in the
docstring of `bench.workloads.catalog`): prompts average ~3,300 tokens and none of it is
reused, so 3 requests/s bring ~9,900 uncached tokens/s: 62 % of the fleet's 4 x 4,000
prefill tokens/s (60, 66 and 62 % over the spans of seeds 1-3); decode ~165 output tokens x
3/s x 0.5 ms / 4 ≈ 6 %; busy ~66-73 %, TPOT ≈ 15 ms / 0.32 ≈ 47 ms. Every request is a root,
so the live pace changes neither the arrivals nor the (zero) reuse.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bench.workloads.builder import TraceBuilder, poisson_starts
from bench.workloads.shared_prefix import text_of_tokens

SYSTEM = "one-sys"
SYSTEM_LINE = "You are a helpful assistant.\n"


@dataclass(frozen=True)
class UniqueShape:
    seed: int = 1
    requests: int = 1200
    rate_per_s: float = 3.0
    prompt_tokens: tuple[int, int] = (500, 6000)
    output_tokens: tuple[int, int] = (30, 300)


def one_shot_prompt(rng: random.Random, prompt_tokens: tuple[int, int]) -> str:
    """A prompt of a size drawn from `prompt_tokens` that shares nothing with another."""
    # A random ticket first, so that no two prompts share even their first words.
    ticket = f"Ticket {rng.getrandbits(64):016x}.\n"
    return ticket + text_of_tokens(rng, rng.randint(*prompt_tokens))


def lines(shape: UniqueShape) -> Iterator[dict[str, Any]]:
    """The meta line, then segments before first use and requests in dispatch order."""
    rng = random.Random(shape.seed)
    builder = TraceBuilder()
    builder.segment(SYSTEM, SYSTEM_LINE)
    for i in range(shape.requests):
        builder.segment(f"one-{i}", one_shot_prompt(rng, shape.prompt_tokens))
        messages = [("system", (SYSTEM,)), ("user", (f"one-{i}",))]
        builder.request(f"one-r{i}", f"one-{i}", messages, rng.randint(*shape.output_tokens))
    builder.start_roots(poisson_starts(rng, shape.requests, shape.rate_per_s))
    meta = {
        "name": f"unique-seed{shape.seed}",
        "description": "unique one-shot prompts of 500-6,000 tokens, Poisson arrivals",
        "family": "unique",
        "seed": shape.seed,
        "rate_per_s": shape.rate_per_s,
    }
    yield from builder.lines(meta)

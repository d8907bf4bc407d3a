"""Predicted cached tokens, time to first token and time per output token per backend.

Pure functions of a snapshot, shared by the cache-aware policies so that a filter and a
scorer reasoning about the same backend agree on the numbers. The model is deliberately
small; every input is a `BackendView` field the gateway keeps up to date:

    ttft_ms = network_ms
            + (queued_prefill_tokens + uncached_tokens) / prefill_tokens_per_s * 1000
            + decode_interference_ms
    tpot_ms = tpot_ms * (1 + alpha * decoding)

Decode interference follows chunked prefill (vLLM, SGLang): every engine step carries
one token for each decoding sequence and fills the rest of its token budget
(`chunk_tokens`) with prefill, so W prefill tokens need ceil(W / (chunk_tokens - decoding))
steps, and each of those steps also runs the decode batch, which costs about one TPOT.
With nothing decoding the term is 0; with anything decoding it is at least one step,
because even a fully cached prompt waits for the next step.

Known overlaps, accepted for simplicity: the learned `prefill_tokens_per_s` and
`tpot_ms` are averages over recent traffic, so they already include some interference
and some batch growth; the terms above add the part due to the *current* load.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

from pydantic import Field

from policies.base import PolicyParams
from policies.snapshot import BackendView, Snapshot

DEFAULT_PREFILL_CHUNK_TOKENS = 2048
DEFAULT_TPOT_GROWTH_PER_DECODE = 0.01
_MIN_PREFILL_TOKENS_PER_S = 1.0
"""Guards the division; the gateway's estimates are always positive."""


class PredictionParams(PolicyParams):
    """Parameters of the latency model, shared by every policy that predicts latency."""

    prefill_chunk_tokens: int = Field(DEFAULT_PREFILL_CHUNK_TOKENS, ge=1)
    """Engine token budget per step with chunked prefill (vLLM `max_num_batched_tokens`)."""
    tpot_growth_per_decode: float = Field(DEFAULT_TPOT_GROWTH_PER_DECODE, ge=0)
    """alpha: relative TPOT growth for each sequence already decoding on the backend."""


def cached_prompt_tokens(snapshot: Snapshot, b: BackendView) -> int:
    """Prompt tokens predicted to be in `b`'s KV cache, capped at the prompt when known."""
    cached = max(0, snapshot.cached_tokens.get(b.name, 0))
    prompt = snapshot.request.prompt_tokens
    return min(cached, prompt) if prompt > 0 else cached


def cached_prompt_tokens_each(snapshot: Snapshot, candidates: Sequence[BackendView]) -> list[int]:
    """`cached_prompt_tokens` of every candidate, in order: one pass instead of a call per
    candidate, which is most of the cost on a 16-backend decision."""
    get, prompt = snapshot.cached_tokens.get, snapshot.request.prompt_tokens
    cached = [get(b.name, 0) for b in candidates]
    if prompt > 0:
        return [0 if c < 0 else prompt if c > prompt else c for c in cached]
    return [0 if c < 0 else c for c in cached]


def uncached_tokens(snapshot: Snapshot, b: BackendView) -> int:
    """Prompt tokens `b` would still have to prefill: `max(0, prompt - cached)`."""
    return max(0, snapshot.request.prompt_tokens - cached_prompt_tokens(snapshot, b))


def uncached_tokens_each(snapshot: Snapshot, candidates: Sequence[BackendView]) -> list[int]:
    """`uncached_tokens` of every candidate, in order."""
    prompt = snapshot.request.prompt_tokens
    cached = cached_prompt_tokens_each(snapshot, candidates)
    return [prompt - c if prompt > c else 0 for c in cached]


def decode_interference_ms(
    b: BackendView, prefill_tokens: int, *, chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS
) -> float:
    """Time the decode batch adds to `prefill_tokens` of chunked prefill (module docs)."""
    if b.decoding <= 0:
        return 0.0
    per_step = max(1, chunk_tokens - b.decoding)
    steps = max(1, math.ceil(prefill_tokens / per_step))
    return steps * b.tpot_ms


def prefill_ms(b: BackendView, tokens: int) -> float:
    """Time `b` needs to prefill `tokens` at its estimated speed."""
    return tokens / max(b.prefill_tokens_per_s, _MIN_PREFILL_TOKENS_PER_S) * 1000.0


def predicted_ttft_ms(
    snapshot: Snapshot, b: BackendView, *, chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS
) -> float:
    """Time to first token if the request went to `b` now: overhead, the prefill queued
    ahead of it plus its own uncached prefill, and interference from running decodes.
    Computed once per snapshot, backend and chunk size; later calls read it back."""
    return predicted_ttfts_ms(snapshot, (b,), chunk_tokens=chunk_tokens)[0]


def predicted_ttfts_ms(
    snapshot: Snapshot,
    candidates: Sequence[BackendView],
    *,
    chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS,
) -> list[float]:
    """`predicted_ttft_ms` of every candidate, in order, sharing the snapshot's memo."""
    memo = snapshot.derived.setdefault(("ttft", chunk_tokens), {})
    get = memo.get
    found = [get(b.name) for b in candidates]
    if None not in found:
        return cast(list[float], found)
    uncached = uncached_tokens_each(snapshot, candidates)
    out = []
    for b, known, tokens in zip(candidates, found, uncached, strict=True):
        if known is None:
            known = memo[b.name] = _ttft_ms(b, tokens, chunk_tokens)
        out.append(known)
    return out


def _ttft_ms(b: BackendView, uncached: int, chunk_tokens: int) -> float:
    prefill_tokens = b.queued_prefill_tokens + uncached
    return (
        b.network_ms
        + prefill_ms(b, prefill_tokens)
        + decode_interference_ms(b, prefill_tokens, chunk_tokens=chunk_tokens)
    )


def predicted_tpot_ms(
    b: BackendView, *, growth_per_decode: float = DEFAULT_TPOT_GROWTH_PER_DECODE
) -> float:
    """Time per output token on `b`: `tpot_ms * (1 + alpha * decoding)`, since a larger decode
    batch makes every step slower (memory-bound decode grows slowly, hence a small alpha)."""
    return predicted_tpots_ms((b,), growth_per_decode=growth_per_decode)[0]


def predicted_tpots_ms(
    candidates: Sequence[BackendView],
    *,
    growth_per_decode: float = DEFAULT_TPOT_GROWTH_PER_DECODE,
) -> list[float]:
    """`predicted_tpot_ms` of every candidate, in order (the formula lives here: one pass)."""
    return [b.tpot_ms * (1.0 + growth_per_decode * max(0, b.decoding)) for b in candidates]


def describe_cache(cached: int, prompt_tokens: int) -> str:
    """A reason such as `12,800 of 13,100 prompt tokens cached`."""
    if prompt_tokens <= 0:  # not counted: say what is known
        return f"{cached:,} prompt tokens cached" if cached > 0 else "no cached prefix"
    if cached <= 0:
        return f"no cached prefix ({prompt_tokens:,} prompt tokens)"
    return f"{cached:,} of {prompt_tokens:,} prompt tokens cached"

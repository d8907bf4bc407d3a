"""Prefers the backend where the request is predicted to cost least: prefill after the
cache and the queue, plus the decode time it would add to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import ClassVar

from pydantic import Field

from policies.answers import Scores
from policies.base import Role, Score
from policies.predict import (
    PredictionParams,
    cached_prompt_tokens_each,
    describe_cache,
    predicted_tpots_ms,
    predicted_ttfts_ms,
    prefill_ms,
)
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot

_MIN_COST_MS = 1.0
"""Costs below a millisecond are noise; the floor also keeps `min / cost` defined."""


@register_policy
class KvCostScorer:
    """Scores `min_cost / cost` over the candidates, so the cheapest scores 1.0, where

        cost_ms = predicted TTFT + decode_weight * predicted TPOT * expected output tokens
                + (work_weight + delay_weight * in_flight) * uncached prompt tokens / prefill rate

    and expected output tokens are the request's `max_tokens` capped at
    `max_output_tokens` (or that cap when unset). See `policies.predict` for TTFT/TPOT.
    The last term is the request's cost to others: the prefill it adds delays every
    request that queues behind it there, so under load a backend that must recompute the
    prompt costs more than its own TTFT says (0 by default: each request for itself).
    `delay_weight` counts that delay once per request already at the backend: with chunked
    prefill every step carries the new prompt's chunk, so the requests queued there wait
    for it and the ones decoding stall while it runs. A cached request adds almost no
    prefill and stays with its cache however busy the backend; a cold one goes where its
    prefill holds up the fewest others, which keeps cold prompts off the backends that
    serve the hot ones.

    A cache hit lowers the TTFT term only by the prefill it saves, and a queue in front
    of it raises it by the prefill waiting there, so an idle replica with nothing cached
    beats a hot one as soon as the hot one's queue outweighs the tokens its cache saves;
    that is what lets a new replica warm up. The ratio keeps scores comparable across
    requests: a backend twice as expensive as the best scores 0.5.
    """

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "kv-cost-scorer"

    class Params(PredictionParams):
        decode_weight: float = Field(0.5, ge=0)
        """Weight of a millisecond of predicted decode time against one of TTFT."""
        max_output_tokens: int = Field(256, ge=0)
        """Expected output tokens when the request sets no `max_tokens`; also their cap."""
        work_weight: float = Field(0.0, ge=0)
        """Weight of the prefill time the request adds to the backend (its uncached tokens
        at the backend's prefill rate) against a millisecond of its own TTFT."""
        delay_weight: float = Field(0.0, ge=0)
        """Weight of the delay the request's uncached prefill adds to each request already
        at the backend (queued ones wait for it, decoding ones stall while it runs)."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        p = self.params
        prompt = snapshot.request.prompt_tokens
        cached = cached_prompt_tokens_each(snapshot, candidates)
        ttfts = predicted_ttfts_ms(snapshot, candidates, chunk_tokens=p.prefill_chunk_tokens)
        tpots = predicted_tpots_ms(candidates, growth_per_decode=p.tpot_growth_per_decode)
        decode_weight, output = p.decode_weight, self._expected_output_tokens(snapshot)
        costs = [
            ttft + decode_weight * tpot * output for ttft, tpot in zip(ttfts, tpots, strict=True)
        ]
        if p.work_weight or p.delay_weight:
            for i, (b, hit) in enumerate(zip(candidates, cached, strict=True)):
                others = p.work_weight + p.delay_weight * max(0, b.in_flight)
                costs[i] += others * prefill_ms(b, prompt - hit if prompt > hit else 0)
        costs = [max(cost, _MIN_COST_MS) for cost in costs]  # NaN stays NaN: scored 0
        cheapest = min(costs, default=_MIN_COST_MS)
        values = [cheapest / cost for cost in costs]
        return Scores(
            candidates,
            values,
            partial(_reason, prompt, p.delay_weight > 0),
            cached,
            candidates,
            ttfts,
            tpots,
        )

    def _expected_output_tokens(self, snapshot: Snapshot) -> int:
        cap, asked = self.params.max_output_tokens, snapshot.request.max_tokens
        return cap if asked is None else max(0, min(asked, cap))


def _reason(
    prompt: int, delays: bool, cached: int, b: BackendView, ttft_ms: float, tpot_ms: float
) -> str:
    text = (
        f"{describe_cache(cached, prompt)}; {b.in_flight} in flight; "
        f"predicted TTFT {ttft_ms:,.0f} ms, TPOT {tpot_ms:,.1f} ms"
    )
    if not delays or b.in_flight <= 0 or prompt <= cached:
        return text
    held = prefill_ms(b, prompt - cached)
    return f"{text}; its prefill holds up {b.in_flight} others by {held:,.0f} ms"

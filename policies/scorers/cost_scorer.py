"""Prefers the backend where the request is predicted to cost least in money: its prices for
the model asked of it, the tier the prompt falls in, the prompt tokens predicted cached
there and, on an explicit-caching backend, those the request writes to its cache. With
`sla-filter` and `quality-filter` before it, the cheapest backend predicted to meet the SLA
and the quality floor wins."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar, NamedTuple

from pydantic import Field

from policies.answers import Scores
from policies.base import PolicyParams, Role, Score
from policies.predict import cached_prompt_tokens_each
from policies.prices import Prices, Rates
from policies.register import register_policy
from policies.snapshot import BackendView, CacheWrite, Snapshot

_PER_MTOK = 1_000_000.0


class CostPrediction(NamedTuple):
    """What one candidate is predicted to charge for the request, and from what (a tuple:
    one per candidate per decision, and a frozen dataclass costs several times more)."""

    cost_usd: float
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    rates: Rates | None
    """The tier's rates; None for a candidate without prices."""
    prices: Prices | None = None
    unpriced_usd_per_mtok: float = 0.0
    written_tokens: int = 0
    """Uncached prompt tokens written to the backend's cache, at `write_usd_per_mtok`."""
    write_usd_per_mtok: float = 0.0


@register_policy
class CostScorer:
    """Scores `min(cost) / cost` over the candidates, so the cheapest scores 1.0 and one
    twice as expensive 0.5, where

        cost = fee + (uncached prompt * input + cached prompt * cached input
                      + written prompt * cache write + expected output * output) / 1e6

    at the rates of the tier the whole prompt falls in. Cached prompt tokens are the
    prefix index's prediction for that backend; written ones, of the uncached, those the
    snapshot says the request writes to an explicit-caching backend's cache (Anthropic's:
    up to its last breakpoint), at the write price of the retention asked (5m or 1h; a
    price that leaves it unset bills it as input); expected output tokens are the request's
    `max_tokens` capped at `max_output_tokens` (or that cap when unset). A candidate
    without prices costs `unpriced_usd_per_mtok` per token of prompt and output (0: free,
    or an amortised price for local engines). Costs below `min_cost_usd` count as it, so
    free candidates tie and the ratio stays defined. With `use_cache: false` no prompt
    token counts as cached or written: the cheapest by list price.
    """

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "cost-scorer"

    class Params(PolicyParams):
        max_output_tokens: int = Field(256, ge=0)
        """Expected output tokens when the request sets no `max_tokens`; also their cap."""
        unpriced_usd_per_mtok: float = Field(0.0, ge=0)
        """What a token (prompt or output) costs at a candidate without prices."""
        min_cost_usd: float = Field(1e-6, gt=0)
        """Predicted costs below this count as this."""
        use_cache: bool = True
        """False: every prompt token at the input price, whatever each backend is predicted
        to hold cached (a price-list-only baseline)."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        predictions = predicted_costs(snapshot, candidates, self.params)
        floor = self.params.min_cost_usd
        costs = [max(p.cost_usd, floor) for p in predictions]  # NaN stays NaN: scored 0
        cheapest = min(costs, default=floor)
        return Scores(candidates, [cheapest / cost for cost in costs], _reason, predictions)


def predicted_costs(
    snapshot: Snapshot, candidates: Sequence[BackendView], params: CostScorer.Params
) -> list[CostPrediction]:
    """Each candidate's predicted cost for the snapshot's request, in order. Candidates
    with the same prices and the same predicted hit share one prediction (most do)."""
    request = snapshot.request
    prompt, asked, cap = request.prompt_tokens, request.max_tokens, params.max_output_tokens
    output = cap if asked is None else max(0, min(asked, cap))
    if params.use_cache:
        cached = cached_prompt_tokens_each(snapshot, candidates)
        writes = snapshot.cache_writes
    else:
        cached, writes = [0] * len(candidates), {}
    get, unpriced = snapshot.prices.get, params.unpriced_usd_per_mtok
    seen: dict[tuple[int, int, CacheWrite | None], CostPrediction] = {}
    out = []
    for b, hit in zip(candidates, cached, strict=True):
        prices, write = get(b.name), writes.get(b.name) if writes else None
        key = (id(prices), hit, write)
        found = seen.get(key)
        if found is None:
            found = seen[key] = _predict(prices, prompt, hit, output, unpriced, write)
        out.append(found)
    return out


def _predict(
    prices: Prices | None,
    prompt: int,
    cached: int,
    output: int,
    unpriced: float,
    write: CacheWrite | None = None,
) -> CostPrediction:
    if prices is None:
        cost = (prompt + output) * unpriced / _PER_MTOK
        return CostPrediction(cost, prompt, cached, output, None, None, unpriced)
    rates = prices.rates(prompt)
    written = 0 if write is None else max(0, min(write.tokens, prompt - cached))
    write_rate = (
        rates.cache_write_1h if write is not None and write.ttl == "1h" else rates.cache_write
    )
    # `Rates.cost_usd` without the clamps: `cached` is within the prompt, `output` >= 0.
    per_token = (
        (prompt - cached - written) * rates.input
        + cached * rates.cached_input
        + written * write_rate
    )
    cost = rates.request_usd + (per_token + output * rates.output) / _PER_MTOK
    return CostPrediction(
        cost, prompt, cached, output, rates, prices, 0.0, written, write_rate if written else 0.0
    )


def _reason(p: CostPrediction) -> str:
    """`predicted $0.0041: 3,900 of 4,100 prompt tokens cached at $0.30/M, 200 written at
    $3.75/M, 256 output at $15/M, tier ≤ 200K`."""
    rates = p.rates
    if rates is None:
        if p.unpriced_usd_per_mtok <= 0:
            return f"predicted {usd(p.cost_usd)}: no prices (free)"
        tokens = p.prompt_tokens + p.output_tokens
        return (
            f"predicted {usd(p.cost_usd)}: no prices; {tokens:,} tokens at "
            f"{per_mtok(p.unpriced_usd_per_mtok)} assumed"
        )
    parts = [_prompt_part(p, rates), f"{p.output_tokens:,} output at {per_mtok(rates.output)}"]
    if rates.request_usd > 0:
        parts.append(f"fee {usd(rates.request_usd)}")
    tier = p.prices.tier_text(rates) if p.prices is not None else ""
    if tier:
        parts.append(tier)
    return f"predicted {usd(p.cost_usd)}: " + ", ".join(parts)


def _prompt_part(p: CostPrediction, rates: Rates) -> str:
    prompt, cached, written = p.prompt_tokens, p.cached_tokens, p.written_tokens
    if prompt <= 0:
        return "prompt not counted"
    if cached <= 0 and written <= 0:
        return f"{prompt:,} prompt tokens at {per_mtok(rates.input)}"
    parts = []
    if cached > 0:
        parts.append(f"cached at {per_mtok(rates.cached_input)}")
    if written > 0:
        parts.append(f"written at {per_mtok(p.write_usd_per_mtok)}")
    first = cached if cached > 0 else written
    text = f"{first:,} of {prompt:,} prompt tokens {parts[0]}"
    if cached > 0 and written > 0:
        text += f", {written:,} {parts[1]}"
    plain = prompt - cached - written
    if plain > 0:
        text += f", {plain:,} at {per_mtok(rates.input)}"
    return text


def usd(amount: float) -> str:
    """`$0.0041`, `$0.000012`, `$1.25`, `$0`: two significant digits at least."""
    if not amount > 0:  # 0, or NaN from a broken price
        return "$0" if amount == 0 else f"${amount}"
    if amount >= 1:
        return f"${amount:,.2f}"
    decimals = min(10, max(4, 1 - math.floor(math.log10(amount))))
    return f"${amount:.{decimals}f}"


def per_mtok(rate: float) -> str:
    """`$0.30/M`, `$15/M`, `$0.075/M`: a price per million tokens as price lists write it."""
    if rate == int(rate):
        return f"${int(rate)}/M"
    if round(rate, 2) == rate:
        return f"${rate:.2f}/M"
    return f"${rate:g}/M"

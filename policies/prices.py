"""What a backend charges for a model, and what a request costs there.

Prices are in US dollars per million tokens ("Mtok"), plus an optional fee per request.
A provider that bills long prompts at other prices (Gemini's and Anthropic's long-context
rates) has `tiers`: the whole request is priced at the tier its prompt falls in, not only
the tokens above the threshold. A local engine may carry an amortised price, or none.

The gateway reads `Prices` from each backend's config (`pricing`, `model_pricing`),
puts each candidate's prices for the request's model into the `Snapshot`, and prices
every finished request from its normalised usage with `Prices.cost_of`; `cost-scorer`
predicts the same sum before sending.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_PRICE_TIERS = 8
"""At most this many context-length tiers per price."""
_PER_MTOK = 1_000_000.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _DerivedRates(_Strict):
    """The prices that default to another one when unset, in a base price and its tiers."""

    cached_input_usd_per_mtok: float | None = Field(
        None, ge=0, description="Prompt tokens read from the provider's cache."
    )
    cache_write_usd_per_mtok: float | None = Field(
        None, ge=0, description="Prompt tokens written to the cache (short retention, e.g. 5 min)."
    )
    cache_write_1h_usd_per_mtok: float | None = Field(
        None, ge=0, description="Prompt tokens written with long retention (Anthropic's 1 h)."
    )
    reasoning_usd_per_mtok: float | None = Field(
        None, ge=0, description="Reasoning tokens, where billed apart from other output."
    )


class PriceTier(_DerivedRates):
    """Prices for requests whose prompt has more than `above_prompt_tokens` tokens; a price
    it leaves unset is the base price's."""

    above_prompt_tokens: int = Field(ge=1)
    input_usd_per_mtok: float | None = Field(None, ge=0)
    output_usd_per_mtok: float | None = Field(None, ge=0)
    request_usd: float | None = Field(None, ge=0)


@dataclass(frozen=True, slots=True)
class Rates:
    """One tier's prices, every default resolved (USD per million tokens; `request_usd`
    per request)."""

    above_prompt_tokens: int
    """0 for the base price; else the tier's threshold."""
    input: float
    cached_input: float
    cache_write: float
    cache_write_1h: float
    output: float
    reasoning: float
    request_usd: float

    def cost_usd(self, use: TokenUse) -> float:
        """What `use` costs at these prices; counts out of range are clamped (a cached
        count above the prompt, reasoning above the completion)."""
        prompt = max(use.prompt_tokens, 0)
        cached = min(max(use.cached_tokens, 0), prompt)
        short = min(max(use.cache_write_tokens, 0), prompt - cached)
        long = min(max(use.cache_write_1h_tokens, 0), prompt - cached - short)
        completion = max(use.completion_tokens, 0)
        reasoning = min(max(use.reasoning_tokens, 0), completion)
        per_token = (
            (prompt - cached - short - long) * self.input
            + cached * self.cached_input
            + short * self.cache_write
            + long * self.cache_write_1h
            + (completion - reasoning) * self.output
            + reasoning * self.reasoning
        )
        return self.request_usd + per_token / _PER_MTOK


@dataclass(frozen=True, slots=True)
class TokenUse:
    """A request's tokens as the prices see them. `prompt_tokens` counts every input token
    (cached and written included); `reasoning_tokens` are part of `completion_tokens`."""

    prompt_tokens: int
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    """Written with the short (default) retention."""
    cache_write_1h_tokens: int = 0
    reasoning_tokens: int = 0


class Prices(_DerivedRates):
    """A backend's prices for a model. Unset: cached input and cache writes at the input
    price (a provider that bills them apart says so), long-retention writes at the short
    ones', reasoning at the output price."""

    input_usd_per_mtok: float = Field(0.0, ge=0, description="Uncached prompt tokens.")
    output_usd_per_mtok: float = Field(0.0, ge=0, description="Completion tokens.")
    request_usd: float = Field(0.0, ge=0, description="A fee per request.")

    tiers: tuple[PriceTier, ...] = Field(
        (),
        max_length=MAX_PRICE_TIERS,
        description="Context-length tiers in ascending `above_prompt_tokens`; the whole "
        "request is priced at the tier its prompt falls in.",
    )

    @model_validator(mode="after")
    def _check_tiers(self) -> Prices:
        last = 0
        for i, tier in enumerate(self.tiers):
            if tier.above_prompt_tokens <= last:
                raise ValueError(
                    f"tiers.{i}.above_prompt_tokens: {tier.above_prompt_tokens:,} must be above "
                    f"the previous tier's {last:,} (tiers ascend)"
                )
            last = tier.above_prompt_tokens
        return self

    @cached_property
    def levels(self) -> tuple[Rates, ...]:
        """The base rates, then each tier's, every default resolved."""
        return (_resolve(self, 0), *(_resolve(self, t.above_prompt_tokens, t) for t in self.tiers))

    def rates(self, prompt_tokens: int) -> Rates:
        """The rates a request with this many prompt tokens is billed at, all of it."""
        levels = self.levels
        chosen = levels[0]
        for level in levels[1:]:
            if prompt_tokens <= level.above_prompt_tokens:
                break
            chosen = level
        return chosen

    def cost_of(self, use: TokenUse) -> float:
        """What `use` costs, at the tier of its prompt."""
        return self.rates(use.prompt_tokens).cost_usd(use)

    def cost_usd(self, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> float:
        """`cost_of` for the three counts every backend reports."""
        return self.cost_of(TokenUse(prompt_tokens, completion_tokens, cached_tokens))

    def tier_text(self, rates: Rates) -> str:
        """`tier ≤ 200K`, `tier > 200K`; empty for a price without tiers."""
        if not self.tiers:
            return ""
        if rates.above_prompt_tokens == 0:
            return f"tier ≤ {short_tokens(self.tiers[0].above_prompt_tokens)}"
        return f"tier > {short_tokens(rates.above_prompt_tokens)}"


_NO_OVERRIDES = PriceTier(above_prompt_tokens=1)
"""The base price's own level: a tier restating nothing."""


def _resolve(base: Prices, above: int, tier: PriceTier | None = None) -> Rates:
    t = tier if tier is not None else _NO_OVERRIDES
    input_ = _or(t.input_usd_per_mtok, base.input_usd_per_mtok)
    output = _or(t.output_usd_per_mtok, base.output_usd_per_mtok)
    cached = t.cached_input_usd_per_mtok
    write = _or(t.cache_write_usd_per_mtok, _or(base.cache_write_usd_per_mtok, input_))
    long = t.cache_write_1h_usd_per_mtok
    reasoning = t.reasoning_usd_per_mtok
    return Rates(
        above_prompt_tokens=above,
        input=input_,
        cached_input=_or(cached, _or(base.cached_input_usd_per_mtok, input_)),
        cache_write=write,
        cache_write_1h=_or(long, _or(base.cache_write_1h_usd_per_mtok, write)),
        output=output,
        reasoning=_or(reasoning, _or(base.reasoning_usd_per_mtok, output)),
        request_usd=_or(t.request_usd, base.request_usd),
    )


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def short_tokens(tokens: int) -> str:
    """`200K`, `1M`, `32,768`: thresholds as price lists write them."""
    if tokens % 1_000_000 == 0:
        return f"{tokens // 1_000_000}M"
    if tokens % 1000 == 0:
        return f"{tokens // 1000}K"
    return f"{tokens:,}"


class PriceLookup(Protocol):
    """Where a finished request's prices are found: by backend and upstream model."""

    def lookup(self, backend: str | None, model: str) -> Prices | None: ...


@dataclass(frozen=True, slots=True)
class PriceBook:
    """Prices by backend, and by backend and upstream model where a model has its own."""

    by_backend: Mapping[str, Prices]
    by_model: Mapping[tuple[str, str], Prices]
    """(backend, upstream model) → that model's prices there, overriding the backend's."""

    def lookup(self, backend: str | None, model: str) -> Prices | None:
        if backend is None:
            return None
        own = self.by_model.get((backend, model)) if self.by_model else None
        return own if own is not None else self.by_backend.get(backend)


NO_PRICES = PriceBook({}, {})

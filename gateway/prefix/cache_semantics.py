"""How a backend's prompt cache behaves, so the prefix index can predict what it holds.

An engine (vLLM, SGLang, llama.cpp, the emulator) caches every block it computes until
memory runs out. Cloud providers cache by their own rules, which `CacheRules` captures:

- `openai-auto` (OpenAI, Azure OpenAI): automatic for prompts of at least 1,024 tokens,
  hits counted in 128-token increments, cleared after 5-10 minutes idle (up to an hour
  off-peak); a hit refreshes the prefix.
- `anthropic-explicit` (Anthropic's Messages API): only prefixes that end at a
  `cache_control` breakpoint the request sent are written, each at least 1,024 tokens
  (2,048 for Haiku); 5 minutes from last use (refreshed on hit), or 1 hour on request.
- `deepseek-disk` (DeepSeek): automatic, on disk, in 64-token units, kept for hours.

A backend's `cache.semantics` picks one (unset: by its kind, `default_semantics`), and its
other `cache` keys override the semantics' parameters. Pure data: no state here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from emulator.provider_cache import PromptCacheOptions

T = TypeVar("T")

CacheSemantics = Literal["engine", "openai-auto", "anthropic-explicit", "deepseek-disk"]
BreakpointTtl = Literal["5m", "1h"]

BREAKPOINT_TTL_S: Mapping[BreakpointTtl, float] = MappingProxyType({"5m": 300.0, "1h": 3600.0})
"""Anthropic's two retentions, each from the entry's last use."""


class AutoBreakpointsConfig(BaseModel):
    """`cache.breakpoints`: the gateway adds Anthropic `cache_control` breakpoints itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        False,
        description="Add breakpoints after tools and system and at the end of the "
        "conversation so far, where predicted reuse pays for the cache write; never when "
        "the client set its own.",
    )
    ttl: BreakpointTtl = Field(
        "5m", description="The retention asked for: 5m (write 1.25x input) or 1h (2x)."
    )


@dataclass(frozen=True, slots=True)
class CacheRules:
    """What the index assumes of one backend's cache (every default resolved)."""

    semantics: CacheSemantics
    capacity_tokens: int
    ttl_s: float
    """Assumed idle time before an entry is gone (the start of TTL calibration)."""
    max_ttl_s: float
    """The longest TTL calibration may learn."""
    min_prefix_tokens: int = 0
    """Shorter prefixes are never cached (reported as 0)."""
    increment_tokens: int = 1
    """Cached prefixes count in these steps above the minimum."""
    refresh_on_hit: bool = True
    """A use restarts an entry's TTL (else it counts from the write)."""
    explicit: bool = False
    """Only prefixes ending at a breakpoint the request sent are written."""

    def cacheable(self, tokens: int) -> int:
        """What the provider can report cached of a held prefix of `tokens` tokens."""
        if tokens < max(1, self.min_prefix_tokens):
            return 0
        return tokens - (tokens - self.min_prefix_tokens) % self.increment_tokens

    @property
    def engine(self) -> bool:
        return self.semantics == "engine"


CLOUD_CAPACITY_TOKENS = 2_000_000
"""What the index keeps per cloud backend when `capacity_tokens` is unset: a provider's
cache is bounded by its TTL, not by memory we can see; this bounds the index (~6 MB)."""

PRESETS: Mapping[CacheSemantics, CacheRules] = MappingProxyType(
    {
        "engine": CacheRules("engine", 100_000, 600.0, 600.0),
        "openai-auto": CacheRules(
            "openai-auto", CLOUD_CAPACITY_TOKENS, 300.0, 3600.0, 1024, 128, True, False
        ),
        "anthropic-explicit": CacheRules(
            "anthropic-explicit", CLOUD_CAPACITY_TOKENS, 300.0, 300.0, 1024, 1, True, True
        ),
        "deepseek-disk": CacheRules(
            "deepseek-disk", CLOUD_CAPACITY_TOKENS, 4 * 3600.0, 48 * 3600.0, 64, 64, True, False
        ),
    }
)
"""Each semantics' parameters; TTLs are the documented lower ends (predicting a hit that
misses costs more than predicting a miss that hits), raised by calibration."""

_BY_KIND: Mapping[str, CacheSemantics] = MappingProxyType(
    {"openai": "openai-auto", "azure-openai": "openai-auto", "anthropic": "anthropic-explicit"}
)
_BY_PRESET: Mapping[str, CacheSemantics] = MappingProxyType(
    {"openai": "openai-auto", "deepseek": "deepseek-disk"}
)


def default_semantics(kind: str, preset: str | None) -> CacheSemantics:
    """The semantics of a backend that does not name one: by kind, then by preset.
    An emulated Anthropic backend is explicit too: its emulator can cache as the API does."""
    return _BY_KIND.get(kind) or _BY_PRESET.get(preset or "") or "engine"


@dataclass(frozen=True, slots=True)
class RuleOverrides:
    """The `cache` keys a backend set itself (None: the semantics' default)."""

    capacity_tokens: int | None = None
    ttl_s: float | None = None
    max_ttl_s: float | None = None
    min_prefix_tokens: int | None = None
    increment_tokens: int | None = None
    refresh_on_hit: bool | None = None


@dataclass(frozen=True, slots=True)
class EmulatedCache:
    """What an emulated backend's engine does, as the defaults the gateway assumes."""

    semantics: CacheSemantics
    overrides: RuleOverrides

    def under(self, given: RuleOverrides) -> RuleOverrides:
        """`given`, its unset keys filled from the emulator's."""
        mine = self.overrides
        return RuleOverrides(
            capacity_tokens=_or(given.capacity_tokens, mine.capacity_tokens),
            ttl_s=_or(given.ttl_s, mine.ttl_s),
            max_ttl_s=_or(given.max_ttl_s, mine.max_ttl_s),
            min_prefix_tokens=_or(given.min_prefix_tokens, mine.min_prefix_tokens),
            increment_tokens=_or(given.increment_tokens, mine.increment_tokens),
            refresh_on_hit=_or(given.refresh_on_hit, mine.refresh_on_hit),
        )


def emulated_cache(options: PromptCacheOptions | None) -> EmulatedCache:
    """An emulated backend caches as its emulator does: as an engine without a
    `prompt_cache`, else as the provider it stands for (its minimum, steps and TTL)."""
    if options is None:
        return EmulatedCache("engine", RuleOverrides())
    if options.semantics == "explicit":
        semantics: CacheSemantics = "anthropic-explicit"
        step = None
    else:
        semantics, step = "openai-auto", options.increment_tokens
    overrides = RuleOverrides(
        ttl_s=options.ttl_s,
        max_ttl_s=options.ttl_1h_s if options.semantics == "explicit" else options.ttl_s,
        min_prefix_tokens=options.min_prefix_tokens,
        increment_tokens=step,
    )
    return EmulatedCache(semantics, overrides)


def resolve_rules(
    semantics: CacheSemantics, overrides: RuleOverrides, breakpoints: AutoBreakpointsConfig
) -> CacheRules:
    """The preset of `semantics` with what the backend set itself. Auto breakpoints of 1 h
    make 1 h the assumed TTL unless `ttl_s` is set."""
    rules = PRESETS[semantics]
    ttl_s = overrides.ttl_s
    if ttl_s is None and rules.explicit and breakpoints.enabled:
        ttl_s = BREAKPOINT_TTL_S[breakpoints.ttl]
    ttl_s = rules.ttl_s if ttl_s is None else ttl_s
    max_ttl_s = overrides.max_ttl_s if overrides.max_ttl_s is not None else rules.max_ttl_s
    return replace(
        rules,
        capacity_tokens=_or(overrides.capacity_tokens, rules.capacity_tokens),
        ttl_s=ttl_s,
        max_ttl_s=max(ttl_s, max_ttl_s),
        min_prefix_tokens=_or(overrides.min_prefix_tokens, rules.min_prefix_tokens),
        increment_tokens=_or(overrides.increment_tokens, rules.increment_tokens),
        refresh_on_hit=_or(overrides.refresh_on_hit, rules.refresh_on_hit),
    )


def _or(value: T | None, default: T) -> T:
    return default if value is None else value

"""A backend's `cache` block: what the router assumes about its prompt (KV) cache and speed,
and the provider's caching rules it resolves to (`gateway/prefix/cache_semantics.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from gateway.config.strict import StrictConfig
from gateway.prefix.cache_semantics import (
    AutoBreakpointsConfig,
    CacheRules,
    CacheSemantics,
    RuleOverrides,
    default_semantics,
    emulated_cache,
    resolve_rules,
)

if TYPE_CHECKING:
    from emulator.settings import EmulatorOptions


class CacheConfig(StrictConfig):
    """What the router assumes about a backend's prompt (KV) cache and speed."""

    capacity_tokens: int = Field(
        100_000, ge=0, description="KV cache size in tokens; 0 disables prefix tracking."
    )
    ttl_s: float = Field(
        600.0, gt=0, description="How long an unused prefix is assumed to stay cached."
    )
    key: str | None = Field(
        None, description="Backends with the same key share one cache (default: own cache)."
    )
    prefill_tokens_per_s: float = Field(
        10_000.0, gt=0, description="Prior for uncached prefill speed; learned from traffic."
    )
    tpot_ms: float = Field(20.0, gt=0, description="Prior for time per output token.")
    semantics: CacheSemantics | None = Field(
        None,
        description="How its prompt cache behaves (docs/config.md, Provider prompt caches); "
        "unset: openai-auto for kinds openai and azure-openai, anthropic-explicit for kind "
        "anthropic, deepseek-disk for preset deepseek, else engine.",
    )
    min_prefix_tokens: int | None = Field(
        None, ge=0, description="Shorter prefixes are never cached; unset: the semantics'."
    )
    increment_tokens: int | None = Field(
        None, ge=1, description="Cached prefixes count in these steps; unset: the semantics'."
    )
    max_ttl_s: float | None = Field(
        None, gt=0, description="The longest TTL calibration may learn; unset: the semantics'."
    )
    refresh_on_hit: bool | None = Field(
        None, description="A hit restarts an entry's TTL; unset: the semantics' (all do)."
    )
    breakpoints: AutoBreakpointsConfig = AutoBreakpointsConfig()

    def rules(
        self, kind: str, preset: str | None, emulator: EmulatorOptions | None = None
    ) -> CacheRules:
        """Every parameter of this cache resolved: the semantics' preset (an emulated
        backend's: its emulator's `prompt_cache`, else an engine's), then what is set here.
        Keys left at their defaults take the semantics' own."""
        emulated = emulated_cache(emulator.prompt_cache) if emulator is not None else None
        semantics = self.semantics or (
            emulated.semantics if emulated is not None else default_semantics(kind, preset)
        )
        given = self.model_fields_set
        overrides = RuleOverrides(
            capacity_tokens=self.capacity_tokens if "capacity_tokens" in given else None,
            ttl_s=self.ttl_s if "ttl_s" in given else None,
            max_ttl_s=self.max_ttl_s,
            min_prefix_tokens=self.min_prefix_tokens,
            increment_tokens=self.increment_tokens,
            refresh_on_hit=self.refresh_on_hit,
        )
        if emulated is not None and emulated.semantics == semantics:
            overrides = emulated.under(overrides)
        if self.breakpoints.enabled and semantics != "anthropic-explicit":
            raise ValueError(f"cache.breakpoints: only for anthropic-explicit, not {semantics}")
        return resolve_rules(semantics, overrides, self.breakpoints)

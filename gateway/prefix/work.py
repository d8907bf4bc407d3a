"""A request's prompt work: its fingerprint and how much of it each backend holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from policies.snapshot import CacheWrite
from providers.cache_breakpoints import CacheBreakpoints

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gateway.prefix.breakpoints import BreakpointPlan
    from gateway.prefix.fingerprint import Fingerprint


@dataclass(frozen=True, slots=True)
class PromptWork:
    """The prompt's fingerprint and how much of it each backend is predicted to hold."""

    fingerprint: Fingerprint | None = None
    cached_tokens: Mapping[str, int] = field(default_factory=dict)
    """Per backend, predicted prompt tokens its cache holds, as the provider would report
    them (its minimum and increments applied)."""
    breakpoints: Mapping[str, BreakpointPlan] = field(default_factory=dict)
    """Per explicit-caching backend: the request's cache breakpoints there (the client's,
    or those the gateway adds), when it has any plan."""

    @property
    def prompt_tokens(self) -> int:
        return self.fingerprint.prompt_tokens if self.fingerprint else 0

    def entries(self, backend: str) -> tuple[int, ...]:
        """Block counts where breakpoints sent to `backend` end (for an explicit index)."""
        plan = self.breakpoints.get(backend)
        return plan.entry_blocks if plan is not None else ()

    def added_breakpoints(self, backend: str) -> CacheBreakpoints | None:
        """The breakpoints the gateway adds to the request sent to `backend`, if any."""
        plan = self.breakpoints.get(backend)
        if plan is None or not plan.added or not plan.after_messages:
            return None
        return CacheBreakpoints(plan.after_messages, plan.ttl)

    def cache_writes(self) -> dict[str, CacheWrite]:
        """Per backend with breakpoints, the tokens the request writes to its cache: from
        what it is predicted to hold to the last breakpoint's end (`Snapshot.cache_writes`)."""
        fingerprint, writes = self.fingerprint, {}
        if fingerprint is None:
            return {}
        for backend, plan in self.breakpoints.items():
            if plan.entry_blocks:
                end = fingerprint.tokens_in(max(plan.entry_blocks))
                written = end - self.cached_tokens.get(backend, 0)
                if written > 0:
                    writes[backend] = CacheWrite(written, plan.ttl)
        return writes

    def uncached(self, backend: str) -> int:
        return max(0, self.prompt_tokens - self.cached_tokens.get(backend, 0))

"""What each backend's prompt cache holds of a request, by that backend's cache rules.

Wraps the prefix index with each backend's `CacheRules` (`cache_semantics.py`): a match
becomes the tokens the provider would report cached (its minimum and increments applied;
for explicit caching, only up to an entry a breakpoint wrote), an explicit backend gets
its request's breakpoint plan (`breakpoints.py`), a dispatch records what the backend
will hold from then on, and what the backend reports calibrates the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.prefix.breakpoints import (
    BreakpointPlan,
    PlanInputs,
    ReuseTracker,
    plan_breakpoints,
)
from gateway.prefix.index import CacheSpec, PrefixIndex
from gateway.prefix.work import PromptWork

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from gateway.config.backends import BackendConfig
    from gateway.prefix.cache_semantics import CacheRules
    from gateway.prefix.fingerprint import Fingerprint
    from policies.prices import Prices


@dataclass(frozen=True, slots=True)
class _Backend:
    group: str
    """The cache it shares (`cache.key`, else its own name)."""
    rules: CacheRules
    config: BackendConfig


class CachePredictor:
    """The prefix index and every backend's cache rules; see the module docstring."""

    def __init__(self, backends: Sequence[BackendConfig]) -> None:
        self._backends = {
            b.name: _Backend(b.cache.key or b.name, b.cache_rules, b) for b in backends
        }
        specs = {
            own.group: _spec(own.rules)
            for own in self._backends.values()
            if own.rules.capacity_tokens > 0
        }
        self.index = PrefixIndex(specs)
        self.reuse = ReuseTracker()
        self._plans = any(
            own.rules.explicit for own in self._backends.values() if own.group in specs
        )

    def group(self, backend: str) -> str:
        return self._backends[backend].group

    def rules(self, backend: str) -> CacheRules:
        return self._backends[backend].rules

    def predict(
        self,
        fingerprint: Fingerprint,
        names: Sequence[str],
        request: tuple[Sequence[Any] | None, Any],
        prices: Mapping[str, Prices],
    ) -> PromptWork:
        """Cached tokens per backend as each would report them, and each explicit
        backend's breakpoints; `request` is the chat's messages (None for a text prompt)
        and tools."""
        backends = self._backends
        matched = self.index.match(fingerprint.blocks, {backends[n].group for n in names})
        held = {n: fingerprint.tokens_in(matched.get(backends[n].group, 0)) for n in names}
        cached = {n: backends[n].rules.cacheable(held[n]) for n in names}
        messages, tools = request
        plans: dict[str, BreakpointPlan] = {}
        if self._plans and messages is not None:
            for name in names:
                plan = self._plan(name, fingerprint, messages, tools, held[name], prices)
                if plan is not None:
                    plans[name] = plan
        return PromptWork(fingerprint, cached, plans)

    def _plan(
        self,
        name: str,
        fingerprint: Fingerprint,
        messages: Sequence[Any],
        tools: Any,
        held: int,
        prices: Mapping[str, Prices],
    ) -> BreakpointPlan | None:
        own = self._backends[name]
        if not own.rules.explicit or not self.index.tracks(own.group):
            return None
        inputs = PlanInputs(
            own.rules,
            own.config.cache.breakpoints,
            held,
            self.index.ttl_s(own.group),
            prices.get(name),
        )
        return plan_breakpoints(fingerprint, messages, tools, inputs, self.reuse)

    def remember(self, backend: str, work: PromptWork) -> Sequence[bytes]:
        """The prompt was sent to `backend`: record what it holds from now on; returns
        the blocks recorded (none when it caches none of this prompt)."""
        own = self._backends[backend]
        fingerprint = work.fingerprint
        if fingerprint is None or not self.index.tracks(own.group):
            return ()
        entries = work.entries(backend)
        self.index.insert(own.group, fingerprint.blocks, entries)
        plan = work.breakpoints.get(backend)
        if plan is not None:
            self.reuse.note_request(fingerprint, plan, self.index.ttl_s(own.group))
        if own.rules.explicit:
            return fingerprint.blocks[: max(entries, default=0)]
        return fingerprint.blocks

    def correct(self, backend: str, work: PromptWork, reported_cached: int) -> None:
        """Calibrate from what the backend says it had cached.

        An engine that reports far fewer cached tokens than predicted evicts sooner than
        its configured capacity suggests: halve the capacity assumed for it; a hit at
        least as large as predicted earns capacity back. A provider's cache is bounded
        by time, not by space we can see: a miss shortens the TTL assumed for it, a hit
        beyond the prediction lengthens it (up to `max_ttl_s`).
        """
        own = self._backends[backend]
        if work.fingerprint is None or not self.index.tracks(own.group):
            return
        predicted = work.cached_tokens.get(backend, 0)
        missed = predicted > 0 and reported_cached < predicted // 2
        if own.rules.engine:
            if missed:
                self.index.shrink(own.group)
            elif reported_cached >= predicted and reported_cached > 0:
                self.index.grow(own.group)
        elif missed:
            self.index.shorten_ttl(own.group)
        elif reported_cached > predicted + own.rules.increment_tokens:
            self.index.lengthen_ttl(own.group)


def _spec(rules: CacheRules) -> CacheSpec:
    return CacheSpec(
        rules.capacity_tokens,
        rules.ttl_s,
        max_ttl_s=rules.max_ttl_s,
        refresh_on_hit=rules.refresh_on_hit,
        explicit=rules.explicit,
    )

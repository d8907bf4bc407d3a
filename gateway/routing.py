"""The request pipeline: route lookup, prompt fingerprint, snapshot, policy decision."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.config import Config, RouteConfig
from gateway.errors import NotFound
from gateway.fleet.state import FleetState
from gateway.prefix.fingerprint import Fingerprint, Fingerprinter
from gateway.prefix.index import CacheSpec, PrefixIndex
from gateway.prefix.token_count import TokenCounter
from gateway.prefix.work import PromptWork
from gateway.quality.book import QualityBook
from gateway.quality.lazy_views import QualityViews
from policies import Pipeline
from policies.decision import Decision
from policies.snapshot import Endpoint, RequestInfo, Snapshot


@dataclass(frozen=True, slots=True)
class RequestTraits:
    """What the gateway read off a request that the router needs."""

    endpoint: Endpoint
    stream: bool
    session_key: str | None = None
    max_tokens: int | None = None
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    messages: list[Any] | None = None
    tools: Any = None
    prompt: str | None = None


class Router:
    """Turns a client's model name and request into a ranked Decision."""

    def __init__(
        self,
        config: Config,
        state: FleetState,
        pipelines: Mapping[str, Pipeline],
        *,
        counter: TokenCounter | None = None,
        quality: QualityBook | None = None,
    ) -> None:
        self._quality = quality
        self._routes = {route.name: route for route in config.routes}
        self._members = {route.name: frozenset(route.backends) for route in config.routes}
        self._state = state
        self._pipelines = pipelines
        self.fingerprinter = Fingerprinter(counter or TokenCounter())
        # Backends that share a cache key share one index entry (e.g. a shared KV store).
        self._group = {b.name: b.cache.key or b.name for b in config.backends}
        specs = {
            self._group[b.name]: CacheSpec(b.cache.capacity_tokens, b.cache.ttl_s)
            for b in config.backends
            if b.cache.capacity_tokens > 0
        }
        self.index = PrefixIndex(specs)
        self.on_insert: Callable[[str, Sequence[bytes]], None] | None = None
        """Called after each local insert (cache group, blocks); must not block."""

    @property
    def routes(self) -> Mapping[str, RouteConfig]:
        return self._routes

    def route(self, model: str) -> RouteConfig:
        route = self._routes.get(model)
        if route is None:
            raise NotFound(
                f"The model '{model}' does not exist; known routes: {', '.join(self._routes)}",
                param="model",
            )
        return route

    def decide(self, route: RouteConfig, traits: RequestTraits) -> tuple[Decision, PromptWork]:
        raw_id = os.urandom(8)
        work = self._work(route, traits)
        info = RequestInfo(
            route=route.name,
            model=route.model,
            endpoint=traits.endpoint,
            stream=traits.stream,
            session_key=traits.session_key,
            seq=self._state.next_seq(route.name),
            rng_seed=int.from_bytes(raw_id, "big"),
            prompt_tokens=work.prompt_tokens,
            max_tokens=traits.max_tokens,
            ttft_slo_ms=traits.ttft_slo_ms or route.sla.ttft_ms,
            tpot_slo_ms=traits.tpot_slo_ms or route.sla.tpot_ms,
        )
        views = self._state.views(route.backends)
        quality = self._quality
        snapshot = Snapshot(
            request=info,
            backends=views,
            now_s=time.time(),
            cached_tokens=work.cached_tokens,
            quality=QualityViews(quality, route.backends, route.model, self._members[route.name])
            if quality is not None
            else {},
        )
        decision = self._pipelines[route.profile].decide(
            snapshot, list(views.values()), raw_id.hex()
        )
        return decision, work

    def remember(self, backend: str, work: PromptWork) -> None:
        """The prompt was sent to `backend`: it will hold the prefix from now on."""
        group = self._group[backend]
        if work.fingerprint is not None and self.index.tracks(group):
            self.index.insert(group, work.fingerprint.blocks)
            if self.on_insert is not None:
                self.on_insert(group, work.fingerprint.blocks)

    def correct(self, backend: str, work: PromptWork, reported_cached: int) -> None:
        """Calibrate the assumed cache size from what the engine says it had cached.

        Far fewer cached tokens than predicted means the engine evicts sooner than its
        configured capacity suggests (or does not cache at all): halve the capacity
        assumed for it. A hit at least as large as predicted earns capacity back.
        """
        group = self._group[backend]
        if work.fingerprint is None or not self.index.tracks(group):
            return
        predicted = work.cached_tokens.get(backend, 0)
        if predicted > 0 and reported_cached < predicted // 2:
            self.index.shrink(group)
        elif reported_cached >= predicted and reported_cached > 0:
            self.index.grow(group)

    def _work(self, route: RouteConfig, traits: RequestTraits) -> PromptWork:
        fingerprint = self._fingerprint(route.model, traits)
        if fingerprint is None:
            return PromptWork()
        group = self._group
        matched = self.index.match(fingerprint.blocks, {group[name] for name in route.backends})
        # Backends mostly share a few prefix lengths (none, the system prompt, the whole).
        tokens = {n: fingerprint.tokens_in(n) for n in {0, *matched.values()}}
        cached = {name: tokens[matched.get(group[name], 0)] for name in route.backends}
        return PromptWork(fingerprint, cached)

    def _fingerprint(self, model: str, traits: RequestTraits) -> Fingerprint | None:
        if traits.messages is not None:
            return self.fingerprinter.chat(model, traits.messages, traits.tools)
        if traits.prompt is not None:
            return self.fingerprinter.text(model, traits.prompt)
        return None

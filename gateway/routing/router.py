"""The request pipeline: route lookup, placement, prompt fingerprint, snapshot, policy
decision, and the plan of routes a request may take (its route, then the fallbacks,
decided lazily, each among only the members carrying every tag the request requires)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gateway.config.backends import price_book
from gateway.config.placement import NO_REQUIREMENT, Placement, TagRequirement, place
from gateway.config.routes import fallback_chain
from gateway.errors import NotFound
from gateway.prefix.fingerprint import Fingerprint, Fingerprinter
from gateway.prefix.predictor import CachePredictor
from gateway.prefix.token_count import TokenCounter
from gateway.prefix.work import PromptWork
from gateway.quality.lazy_views import QualityViews
from policies.snapshot import BackendView, Endpoint, RequestInfo, Snapshot

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from gateway.config.root import Config, RouteConfig
    from gateway.fleet.state import FleetState
    from gateway.quality.book.quality_book import QualityBook
    from policies.decision import Decision
    from policies.pipeline import Pipeline
    from policies.prices import PriceBook, Prices


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
    required_tags: TagRequirement = NO_REQUIREMENT
    """Placement tags the request requires (its header's; a client key's to come), each
    route of its plan adding its own `require_tags`."""


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What every decision on one route needs of its config, computed once."""

    names: tuple[str, ...]
    members: frozenset[str]
    models: Mapping[str, str]
    """Members asked for another model than the route's `model`, with that model."""
    windows: Mapping[str, int]
    """Members with a context window of their own, overriding the backend's."""
    chain: tuple[str, ...]
    """The route, then its fallbacks in the order they are tried."""
    prices: Mapping[str, Prices]
    """Each priced member's prices for the model the route asks of it."""
    own: Placement
    """The members placed by the route's own `require_tags` alone (most requests')."""


def _prepare(
    route: RouteConfig,
    routes: Mapping[str, RouteConfig],
    tags: Mapping[str, frozenset[str]],
    book: PriceBook,
) -> _Prepared:
    members = route.members
    requirement = NO_REQUIREMENT.require(_source(route), route.require_tags)
    return _Prepared(
        names=route.backend_names,
        members=frozenset(route.backend_names),
        models={m.backend: m.model for m in members if m.model != route.model},
        windows={
            m.backend: m.context_window_tokens
            for m in members
            if m.context_window_tokens is not None
        },
        chain=fallback_chain(route, routes),
        prices={
            m.backend: prices
            for m in members
            if (prices := book.lookup(m.backend, m.model)) is not None
        },
        own=place(route.name, route.backend_names, tags, requirement),
    )


def _source(route: RouteConfig) -> str:
    return f"route:{route.name}"


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
        self._profiles = {route.name: config.profile_of(route) for route in config.routes}
        self._tags = {b.name: frozenset(b.tags) for b in config.backends}
        book = price_book(config.backends)
        self._prepared = {
            route.name: _prepare(route, self._routes, self._tags, book) for route in config.routes
        }
        self._state = state
        self._pipelines = pipelines
        self.fingerprinter = Fingerprinter(counter or TokenCounter())
        # Backends that share a cache key share one index entry (e.g. a shared KV store);
        # each is predicted by its own cache rules (an engine's, a provider's).
        self.caches = CachePredictor(config.backends)
        self.index = self.caches.index
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

    def plan(self, route: RouteConfig, traits: RequestTraits) -> RoutePlan:
        """The routes this request may take, `route`'s own decision made at once."""
        chain = [self._routes[name] for name in self._prepared[route.name].chain]
        return RoutePlan(self, chain, traits)

    def decide(self, route: RouteConfig, traits: RequestTraits) -> Leg:
        """Decide among `route`'s members that carry every tag required of them."""
        raw_id = os.urandom(8)
        prepared = self._prepared[route.name]
        placement = self._place(route, traits.required_tags)
        names = placement.allowed
        members = prepared.members if names == prepared.names else frozenset(names)
        work = self._work(route, traits, names)
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
            member_models=prepared.models,
            required_tags=placement.requirement.tags,
        )
        views = self._views(prepared, names)
        quality = self._quality
        snapshot = Snapshot(
            request=info,
            backends=views,
            now_s=time.time(),
            cached_tokens=work.cached_tokens,
            cache_writes=work.cache_writes() if work.breakpoints else {},
            quality=QualityViews(quality, names, route.model, members, prepared.models)
            if quality is not None
            else {},
            prices=prepared.prices,
        )
        decision = self._pipelines[self._profiles[route.name]].decide(
            snapshot, list(views.values()), raw_id.hex()
        )
        budget = work.prompt_tokens + (info.max_tokens or 0)
        return Leg(route, decision, work, placement, budget, snapshot)

    def _place(self, route: RouteConfig, requirement: TagRequirement) -> Placement:
        """The route's members allowed by `requirement` plus the route's own tags."""
        own = self._prepared[route.name].own
        requirement = requirement.require(_source(route), route.require_tags)
        if requirement == own.requirement:
            return own
        return place(route.name, route.backend_names, self._tags, requirement)

    def _views(self, prepared: _Prepared, names: Sequence[str]) -> dict[str, BackendView]:
        views = self._state.views(names)
        for name, window in prepared.windows.items():
            if name in views:
                views[name] = replace(views[name], context_window_tokens=window)
        return views

    def remember(self, backend: str, work: PromptWork) -> None:
        """The prompt was sent to `backend`: it will hold the prefix from now on."""
        blocks = self.caches.remember(backend, work)
        if blocks and self.on_insert is not None:
            self.on_insert(self.caches.group(backend), blocks)

    def correct(self, backend: str, work: PromptWork, reported_cached: int) -> None:
        """Calibrate the index from what the backend says it had cached
        (`CachePredictor.correct`)."""
        self.caches.correct(backend, work, reported_cached)

    def _work(self, route: RouteConfig, traits: RequestTraits, names: Sequence[str]) -> PromptWork:
        fingerprint = self._fingerprint(route.model, traits)
        if fingerprint is None:
            return PromptWork()
        request = (traits.messages, traits.tools)
        return self.caches.predict(fingerprint, names, request, self._prepared[route.name].prices)

    def _fingerprint(self, model: str, traits: RequestTraits) -> Fingerprint | None:
        if traits.messages is not None:
            return self.fingerprinter.chat(model, traits.messages, traits.tools)
        if traits.prompt is not None:
            return self.fingerprinter.text(model, traits.prompt)
        return None


@dataclass(frozen=True, slots=True)
class Leg:
    """One route of a request's plan, decided: the backends to try, in order, and the
    upstream model each is asked for."""

    route: RouteConfig
    decision: Decision
    work: PromptWork
    placement: Placement
    """Which members the request's tags allowed; the decision saw only those."""
    budget_tokens: int = 0
    """The prompt plus `max_tokens`: what a provider's token budget may charge it."""
    snapshot: Snapshot | None = None
    """What the decision saw: flow control predicts from it whether a backend has room."""

    def prefer(self, backend: str) -> Leg:
        """This leg with `backend` tried first, the decision's order otherwise kept."""
        order = self.decision.order
        if order and order[0] == backend:
            return self
        rest = tuple(name for name in order if name != backend)
        return replace(self, decision=replace(self.decision, order=(backend, *rest)))

    @property
    def empty_reason(self) -> str:
        """Why the decision ordered no backend, when it ordered none."""
        if self.placement.unmet:
            return self.placement.message()
        return self.decision.picker_reason


class RoutePlan:
    """The routes a request may take, in order: the one it named, decided at once, then
    its fallbacks (`fallback_chain`), each decided only when the dispatcher reaches it.
    Per request; its one piece of state is how far along the chain it is."""

    __slots__ = ("_first_route", "_rest", "_router", "_traits", "first")

    def __init__(
        self,
        router: Router,
        chain: Sequence[RouteConfig],
        traits: RequestTraits,
        *,
        decided: Leg | None = None,
    ) -> None:
        """`decided`: the first route's decision, when it was made already."""
        first = chain[0]
        # The named route's tags hold on its fallbacks too, as the request's own do.
        required = traits.required_tags.require(_source(first), first.require_tags)
        if required is not traits.required_tags:  # `require` returns itself when it adds none
            traits = replace(traits, required_tags=required)
        self._router, self._traits = router, traits
        self._first_route = first
        self._rest = list(chain[1:])
        self.first = decided or router.decide(first, self._traits)

    @property
    def traits(self) -> RequestTraits:
        return self._traits

    def redecide(self) -> Leg:
        """The first route decided again, on the fleet as it is now (a request released
        from a queue goes where the fleet has room then, not where it had none)."""
        self.first = self._router.decide(self._first_route, self._traits)
        return self.first

    def peek_fallback(self) -> Leg | None:
        """The next route's decision now, without moving on to it."""
        if not self._rest:
            return None
        return self._router.decide(self._rest[0], self._traits)

    @property
    def has_fallback(self) -> bool:
        return bool(self._rest)

    def fallback(self) -> Leg | None:
        """The next route's decision (on the fleet as it is now), or None at the end."""
        if not self._rest:
            return None
        return self._router.decide(self._rest.pop(0), self._traits)

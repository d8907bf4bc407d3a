"""Dry-run routing: what the gateway would decide for a request, without sending it, and
which fallback route would take it when its own route has no candidate.

A body of another client format (Anthropic's Messages, OpenAI's Responses) is read by the
same `Dialect` the proxy uses, into the chat request the gateway would route."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.config.bounds import check_depth
from gateway.fleet.state import FleetState
from gateway.http.ingress import INGRESSES
from gateway.http.wire import parse_body, traits_of
from gateway.routing.decisions import route_chain
from gateway.routing.router import Router
from policies.describe import describe_decision
from policies.profiles import build_pipelines

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gateway.config.root import Config, RouteConfig
    from gateway.telemetry.record import ClientEndpoint
    from policies.snapshot import Endpoint


def explain_request(
    config: Config, raw: bytes, *, endpoint: ClientEndpoint, headers: Mapping[str, str]
) -> dict[str, Any]:
    """Decide on an idle fleet (every backend healthy, nothing in flight). `endpoint` is
    the API the body is for, as the proxy serves it (`messages`: `/v1/messages`)."""
    state = FleetState(config.backends, config.health)
    router = Router(config, state, build_pipelines(config.policies, config.profiles))
    path = INGRESSES[endpoint]
    check_depth(raw, config.bounds.max_json_depth)
    translation = path.dialect.read(raw, config.bounds)
    bounds = None if translation.translated else config.bounds
    body, head = parse_body(translation.body, path.endpoint, bounds)
    lowered = {k.lower(): v for k, v in headers.items()}
    cascade = next((c for c in config.cascades if c.name == head.model), None)
    if cascade is not None:
        tiers = [
            _explain_route(router, router.route(t), path.endpoint, body, head, lowered)
            for t in cascade.tiers
        ]
        return {
            "cascade": cascade.name,
            "checks": [c.check for c in cascade.checks],
            "judge": cascade.judge.route if cascade.judge is not None else None,
            "streaming": cascade.streaming.mode,
            "start": "the first tier: a dry run has no evidence of how this kind of request "
            "fared (a running gateway's learned start may skip tiers)",
            "tiers": tiers,
        }
    return _explain_route(router, router.route(head.model), path.endpoint, body, head, lowered)


def _explain_route(
    router: Router,
    route: RouteConfig,
    endpoint: Endpoint,
    body: dict[str, Any],
    head: Any,
    lowered: Mapping[str, str],
) -> dict[str, Any]:
    plan = router.plan(route, traits_of(endpoint, body, head, lowered))
    # Nothing is sent, so only a route left without candidates moves on to its fallback.
    legs, left = [plan.first], []
    while not legs[-1].decision.order and (leg := plan.fallback()) is not None:
        left.append(legs[-1].empty_reason)
        legs.append(leg)
    return {
        "route": route.name,
        "upstream_model": route.model,
        "upstream_models": dict(route.upstream_models),
        "prompt_tokens": plan.first.work.prompt_tokens,
        **describe_decision(plan.first.decision),
        "placement": plan.first.placement.describe(),
        "route_chain": route_chain([leg.decision for leg in legs], left),
        "fallbacks": [
            {
                "upstream_models": dict(leg.route.upstream_models),
                **describe_decision(leg.decision),
                "placement": leg.placement.describe(),
            }
            for leg in legs[1:]
        ],
    }

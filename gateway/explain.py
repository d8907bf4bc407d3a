"""Dry-run routing: what the gateway would decide for a request, without sending it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.config import Config
from gateway.fleet.state import FleetState
from gateway.http.wire import parse_body, traits_of
from gateway.routing import Router
from policies import build_pipelines, describe_decision
from policies.snapshot import Endpoint


def explain_request(
    config: Config, raw: bytes, *, endpoint: Endpoint, headers: Mapping[str, str]
) -> dict[str, Any]:
    """Decide on an idle fleet (every backend healthy, nothing in flight)."""
    state = FleetState(config.backends, config.health)
    router = Router(config, state, build_pipelines(config.policies, config.profiles))
    body, head = parse_body(raw, endpoint)
    route = router.route(head.model)
    lowered = {k.lower(): v for k, v in headers.items()}
    decision, work = router.decide(route, traits_of(endpoint, body, head, lowered))
    return {
        "route": route.name,
        "upstream_model": route.model,
        "prompt_tokens": work.prompt_tokens,
        **describe_decision(decision),
    }

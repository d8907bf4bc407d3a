"""A route plan's first leg: preferred backends, decided again, a fallback peeked at."""

from __future__ import annotations

from typing import Any

from gateway.config.root import parse_config
from gateway.fleet.state import FleetState
from gateway.routing.router import RequestTraits, RoutePlan, Router
from policies.profiles import build_pipelines


def router() -> Router:
    backends = [
        {"name": n, "base_url": f"http://127.0.0.1:9/{n}", "models": ["m"]} for n in ("a", "b", "c")
    ]
    plugins = [{"ref": "healthy-filter"}, {"ref": "least-load-scorer"}, {"ref": "max-score-picker"}]
    data: dict[str, Any] = {
        "backends": backends,
        "routes": [
            {"name": "r", "model": "m", "backends": ["a", "b"], "fallbacks": ["spill"]},
            {"name": "spill", "model": "m", "backends": ["c"]},
        ],
        "profiles": [{"name": "balanced", "plugins": plugins}],
    }
    config = parse_config(data)
    state = FleetState(config.backends, config.health)
    return Router(config, state, build_pipelines(config.policies, config.profiles))


TRAITS = RequestTraits(endpoint="chat.completions", stream=False, prompt="hi")


def test_prefer_moves_a_backend_first_and_keeps_the_rest_in_order() -> None:
    leg = router().decide(router().route("r"), TRAITS)
    first, second = leg.decision.order
    assert leg.prefer(first) is leg
    moved = leg.prefer(second)
    assert moved.decision.order == (second, first)
    assert moved.decision.id == leg.decision.id


def test_redecide_sees_the_fleet_as_it_is_now() -> None:
    r = router()
    plan = r.plan(r.route("r"), TRAITS)
    chosen = plan.first.decision.chosen
    assert chosen is not None
    r._state.acquire(chosen, 1_000)  # the load a dispatch would add
    again = plan.redecide()
    assert again is plan.first
    assert again.decision.chosen != chosen


def test_peek_fallback_does_not_move_on() -> None:
    r = router()
    plan = r.plan(r.route("r"), TRAITS)
    peeked = plan.peek_fallback()
    assert peeked is not None and peeked.route.name == "spill"
    assert plan.has_fallback
    taken = plan.fallback()
    assert taken is not None and taken.route.name == "spill"
    assert not plan.has_fallback and plan.peek_fallback() is None


def test_a_plan_may_start_from_a_decision_made_already() -> None:
    r = router()
    leg = r.decide(r.route("r"), TRAITS)
    plan = RoutePlan(r, [r.route("r"), r.route("spill")], TRAITS, decided=leg)
    assert plan.first is leg

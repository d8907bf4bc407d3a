"""Tenants' decayed service, and a request's class and tenant from its key and headers."""

from __future__ import annotations

import math

import pytest

from gateway.admission.classes import ANONYMOUS, Classifier
from gateway.admission.config import FlowControlConfig, TenantsConfig
from gateway.admission.ledger import ServiceLedger
from gateway.errors import InvalidRequest
from gateway.tenancy.caller import Caller


def test_service_halves_every_half_life_and_divides_by_weight() -> None:
    ledger = ServiceLedger(TenantsConfig(half_life_s=10, weights={"gold": 4}))
    ledger.charge("gold", 800, now=0)
    ledger.charge("lead", 800, now=0)
    ledger.charge_answer("lead", 100, now=0)  # output tokens count twice
    seen = ledger.weighted(["gold", "lead", "new"], now=10)
    assert seen["gold"] == pytest.approx(100)
    assert seen["lead"] == pytest.approx(500)
    assert seen["new"] == 0


def test_the_ledger_forgets_the_stalest_tenant_first() -> None:
    ledger = ServiceLedger(TenantsConfig(max_tenants=2))
    for i, tenant in enumerate(["a", "b", "a", "c"]):
        ledger.charge(tenant, 10, now=i)
    assert len(ledger) == 2
    assert ledger.weighted(["b"], now=4)["b"] == 0
    assert ledger.weighted(["a"], now=4)["a"] > 0
    assert not math.isnan(ledger.weighted(["c"], now=4)["c"])


def test_a_tenant_alone_is_never_over_its_share() -> None:
    ledger = ServiceLedger(TenantsConfig(half_life_s=10))
    ledger.charge("loud", 10_000, now=0)
    assert not ledger.over_share("loud", now=1)


def test_a_tenant_with_more_than_its_weighted_share_is_over_it_while_others_are_served() -> None:
    ledger = ServiceLedger(TenantsConfig(half_life_s=10, weights={"gold": 4}))
    ledger.charge("loud", 1_000, now=0)
    ledger.charge("quiet", 100, now=1)
    assert ledger.over_share("loud", now=2)
    assert not ledger.over_share("quiet", now=2)
    assert not ledger.over_share("nobody", now=2)
    # A weight of 4 against 1 allows 80 % of the service: 1,000 of 1,300 is under it.
    ledger.charge("gold", 200, now=1)
    assert not ledger.over_share("gold", now=2)
    assert ledger.over_share("loud", now=2)


def test_a_tenant_not_served_for_a_half_life_no_longer_makes_others_over_their_share() -> None:
    ledger = ServiceLedger(TenantsConfig(half_life_s=10))
    ledger.charge("quiet", 100, now=0)
    ledger.charge("loud", 1_000, now=5)
    assert ledger.over_share("loud", now=9)
    assert not ledger.over_share("loud", now=11)  # quiet last served 11 s ago
    ledger.charge("quiet", 10, now=12)  # back: loud is over its share again
    assert ledger.over_share("loud", now=12)


def test_a_forgotten_tenant_leaves_the_total_and_the_active_weights() -> None:
    ledger = ServiceLedger(TenantsConfig(half_life_s=10, max_tenants=2))
    ledger.charge("a", 1_000, now=0)
    ledger.charge("b", 10, now=0)
    ledger.charge("c", 10, now=0)  # "a", the stalest, is forgotten with its service
    assert len(ledger) == 2
    assert not ledger.over_share("b", now=0)
    assert not ledger.over_share("c", now=0)


@pytest.mark.parametrize("charged_at", [0.0, 4.0, 10.0])
def test_a_charge_made_earlier_counts_as_if_it_had_been_charged_then(charged_at: float) -> None:
    config = TenantsConfig(half_life_s=10)
    here, late = ServiceLedger(config), ServiceLedger(config)
    for at, tokens in sorted([(2.0, 300), (charged_at, 800)]):
        here.charge("a", tokens, now=at)  # in time order, as a ledger is charged
    late.charge("a", 300, now=2)
    late.charge_at("a", 800, at=charged_at, now=12)  # learnt of at 12
    expected = 300 * 0.5 ** (18 / 10) + 800 * 0.5 ** ((20 - charged_at) / 10)
    assert late.weighted(["a"], now=20)["a"] == pytest.approx(expected)
    assert late.weighted(["a"], now=20) == pytest.approx(here.weighted(["a"], now=20))


def test_a_charge_dated_after_now_counts_as_made_now() -> None:
    ledger = ServiceLedger(TenantsConfig(half_life_s=10))
    ledger.charge_at("a", 500, at=15, now=10)
    assert ledger.weighted(["a"], now=10)["a"] == pytest.approx(500)


def test_charge_at_counts_towards_the_bound_as_a_charge_does() -> None:
    ledger = ServiceLedger(TenantsConfig(max_tenants=2))
    ledger.charge("a", 10, now=0)
    ledger.charge_at("b", 10, at=0, now=1)
    ledger.charge_at("c", 0, at=0, now=1)  # nothing charged: nothing remembered
    ledger.charge_at("d", 10, at=0, now=2)
    assert len(ledger) == 2
    assert ledger.weighted(["a"], now=2)["a"] == 0


def test_the_listener_hears_of_charges_made_here_only() -> None:
    ledger = ServiceLedger(TenantsConfig(output_weight=2))
    heard: list[tuple[str, float]] = []
    ledger.on_charge = lambda tenant, tokens: heard.append((tenant, tokens))
    ledger.charge("a", 100, now=0)
    ledger.charge_answer("a", 10, now=0)
    ledger.charge("a", 0, now=0)
    ledger.charge_at("b", 100, at=0, now=1)  # a peer's: not told back
    assert heard == [("a", 100), ("a", 20)]


def flow(**fields: object) -> FlowControlConfig:
    return FlowControlConfig.model_validate(fields)


def caller(key: str = "k1", team: str | None = None) -> Caller:
    return Caller(key_id=key, kind="virtual", team=team)


@pytest.mark.parametrize(
    ("headers", "key", "cls", "tenant"),
    [
        ({}, None, "standard", ANONYMOUS),
        ({"x-switchyard-priority": "batch"}, None, "batch", ANONYMOUS),
        ({"x-switchyard-tenant": "acme"}, None, "standard", "acme"),
        ({"x-switchyard-tenant": "acme"}, caller(), "standard", "key:k1"),
        # The key's class is the highest it may claim; the header may lower it.
        ({}, caller("vip"), "interactive", "key:vip"),
        ({"x-switchyard-priority": "interactive"}, caller("cheap"), "batch", "key:cheap"),
        ({"x-switchyard-priority": "sheddable"}, caller("vip"), "sheddable", "key:vip"),
        ({}, caller("x", team="ops"), "interactive", "key:x"),
    ],
)
def test_standing(headers: dict[str, str], key: Caller | None, cls: str, tenant: str) -> None:
    config = flow(
        classes=[
            {"name": "interactive", "band": 0, "keys": ["vip"], "teams": ["ops"]},
            {"name": "standard", "band": 1},
            {"name": "batch", "band": 2, "keys": ["cheap"]},
            {"name": "sheddable", "band": 3, "sheddable": True},
        ]
    )
    standing = Classifier(config).standing(key, headers)
    assert (standing.cls.name, standing.tenant) == (cls, tenant)


def test_tenant_by_team_then_header() -> None:
    classifier = Classifier(flow(tenants={"by": ["team", "header"]}))
    assert classifier.standing(caller(team="ml"), {}).tenant == "team:ml"
    assert classifier.standing(caller(), {"x-switchyard-tenant": "h"}).tenant == "h"


def test_an_unknown_class_is_the_clients_error() -> None:
    with pytest.raises(InvalidRequest, match="unknown class 'urgent'"):
        Classifier(flow()).standing(None, {"x-switchyard-priority": "urgent"})


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"default_class": "gold"}, "default_class: 'gold' is not a class"),
        ({"classes": [{"name": "a", "band": 0}, {"name": "a", "band": 1}]}, "each class name"),
        ({"order": [{"type": "nope-order"}]}, "order.0.type: unknown order policy"),
    ],
)
def test_flow_control_config_problems(fields: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        flow(**fields)

"""Placement tags through the real app over emulated engines on loopback: a request goes
only to backends carrying every tag its route and its header require, whatever the
profile, on its fallback routes too; one no allowed backend can serve gets a clear 400."""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pytest

from gateway.config.root import parse_config
from gateway.routing.explain import explain_request
from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config
from tests.gateway.routing.test_fallback import chain_of, closed_port_url, decision_of

HEADER = "x-switchyard-require-tags"
TAGS = {"eu-gpu": ["eu", "local", "no-retention"], "eu-cloud": ["eu"], "us-cloud": ["us"]}
WITH_FILTER = [
    {"ref": "healthy-filter"},
    {"ref": "placement-filter"},
    {"ref": "round-robin-scorer"},
    {"ref": "max-score-picker"},
]
WITHOUT_FILTER = [{"ref": "round-robin-scorer"}, {"ref": "max-score-picker"}]


def chat(model: str = "default", *, stream: bool = False) -> dict[str, Any]:
    messages = [{"role": "user", "content": "hello"}]
    return {"model": model, "messages": messages, "max_tokens": 3, "stream": stream}


async def tagged_fleet(
    start_emulator: StartEmulator, profile: list[dict[str, Any]] = WITH_FILTER
) -> dict[str, Any]:
    """Route `default` over three engines tagged as in TAGS."""
    urls = {name: (await start_emulator()).base_url for name in TAGS}
    config = make_config(urls, profile=profile)
    for backend in config["backends"]:
        backend["tags"] = TAGS[backend["name"]]
    return config


async def served_by(
    gw: RunningGateway, n: int, headers: dict[str, str], model: str = "default"
) -> Counter[str]:
    served: Counter[str] = Counter()
    for i in range(n):
        response = await gw.client.post(
            "/v1/chat/completions", json=chat(model, stream=i % 2 == 1), headers=headers
        )
        assert response.status_code == 200, response.text
        served[response.headers["x-switchyard-backend"]] += 1
    return served


@pytest.fixture
async def gw(start_emulator: StartEmulator, start_gateway: StartGateway) -> RunningGateway:
    return await start_gateway(await tagged_fleet(start_emulator))


async def test_without_a_requirement_every_backend_serves(gw: RunningGateway) -> None:
    assert set(await served_by(gw, 6, {})) == set(TAGS)


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("eu", {"eu-gpu", "eu-cloud"}),
        ("eu,no-retention", {"eu-gpu"}),
        ("No-Retention", {"eu-gpu"}),
        ("us", {"us-cloud"}),
    ],
)
async def test_the_header_keeps_requests_on_tagged_backends(
    gw: RunningGateway, header: str, allowed: set[str]
) -> None:
    assert set(await served_by(gw, 6, {HEADER: header})) == allowed


async def test_the_decision_shows_the_requirement_and_what_it_excluded(
    gw: RunningGateway,
) -> None:
    response = await gw.client.post("/v1/chat/completions", json=chat(), headers={HEADER: "eu"})
    decision = await decision_of(gw, response)
    assert decision["placement"] == {
        "require_tags": ["eu"],
        "sources": {"header": ["eu"]},
        "excluded": {"us-cloud": "missing tags: eu"},
    }
    verdicts = {c["backend"]: c["verdicts"]["placement-filter"] for c in decision["candidates"]}
    assert verdicts == {
        "eu-gpu": {"keep": True, "reason": "tags ok: eu"},
        "eu-cloud": {"keep": True, "reason": "tags ok: eu"},
    }
    plain = await decision_of(gw, await gw.client.post("/v1/chat/completions", json=chat()))
    assert plain["placement"] == {"require_tags": [], "sources": {}, "excluded": {}}
    assert plain["candidates"][0]["verdicts"]["placement-filter"]["reason"] == "no tags required"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_an_unmet_requirement_is_a_clear_400(gw: RunningGateway, stream: bool) -> None:
    response = await gw.client.post(
        "/v1/chat/completions", json=chat(stream=stream), headers={HEADER: "no-retention,us"}
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "no backend of route 'default' has tags no-retention, us",
        "type": "invalid_request_error",
        "param": None,
        "code": "placement_unsatisfiable",
    }
    decision = await decision_of(gw, response)
    assert decision["status"] == 400 and decision["attempts"] == []
    assert decision["candidates"] == [] and decision["order"] == []
    assert decision["placement"]["sources"] == {"header": ["no-retention", "us"]}
    assert chain_of(decision) == [("default", response.json()["error"]["message"])]
    assert all(b["in_flight"] == 0 for b in gw.gateway.state.describe())


async def test_a_malformed_header_is_refused_before_routing(gw: RunningGateway) -> None:
    response = await gw.client.post("/v1/chat/completions", json=chat(), headers={HEADER: "eu,"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["message"].startswith("header x-switchyard-require-tags: tag 2 ('') is not a tag")
    assert "x-switchyard-decision" not in response.headers


async def test_a_routes_own_tags_hold_without_the_filter_in_its_profile(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    config = await tagged_fleet(start_emulator, WITHOUT_FILTER)
    config["routes"][0]["require_tags"] = ["eu"]
    gw = await start_gateway(config)
    assert set(await served_by(gw, 6, {})) == {"eu-gpu", "eu-cloud"}
    assert set(await served_by(gw, 4, {HEADER: "local"})) == {"eu-gpu"}
    response = await gw.client.post("/v1/chat/completions", json=chat(), headers={HEADER: "local"})
    placement = (await decision_of(gw, response))["placement"]
    assert placement["sources"] == {"header": ["local"], "route:default": ["eu"]}
    assert placement["require_tags"] == ["eu", "local"]
    refused = await gw.client.post("/v1/chat/completions", json=chat(), headers={HEADER: "us"})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "no backend of route 'default' has tags eu, us"


async def fallback_gateway(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    primary_url: str,
    window: int | None = None,
    **primary: Any,
) -> RunningGateway:
    """Route `primary` over `eu-gpu` (at `primary_url`, with context window `window`) falls
    back to route `backup` over `us-cloud`, which lacks every tag `eu-gpu` has."""
    config = make_config(
        {"eu-gpu": primary_url, "us-cloud": (await start_emulator()).base_url},
        profile=[*WITH_FILTER[:2], {"ref": "context-window-filter"}, *WITH_FILTER[2:]],
    )
    for backend in config["backends"]:
        backend["tags"] = TAGS[backend["name"]]
    config["backends"][0]["context_window_tokens"] = window
    config["routes"] = [
        {
            "name": "primary",
            "model": "emulated-model",
            "backends": ["eu-gpu"],
            "fallbacks": ["backup"],
            **primary,
        },
        {"name": "backup", "model": "emulated-model", "backends": ["us-cloud"]},
    ]
    return await start_gateway(config)


async def test_a_fallback_without_the_tag_is_not_used(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await fallback_gateway(start_emulator, start_gateway, closed_port_url())
    # Without a requirement, the primary's failure goes to the fallback (the control).
    served = await gw.client.post("/v1/chat/completions", json=chat("primary"))
    assert served.headers["x-switchyard-backend"] == "us-cloud"
    response = await gw.client.post(
        "/v1/chat/completions", json=chat("primary"), headers={HEADER: "eu"}
    )
    assert response.status_code == 502, "the primary's own failure, not the fallback's"
    assert response.json()["error"]["code"] == "upstream_connect_error"
    decision = await decision_of(gw, response)
    assert chain_of(decision) == [
        ("primary", "every attempt failed before its first byte (upstream_connect_error)"),
        ("backup", "no backend of route 'backup' has tags eu"),
    ]
    assert [a["backend"] for a in decision["attempts"]] == ["eu-gpu"]
    [fallback] = decision["fallbacks"]
    assert fallback["order"] == [] and fallback["candidates"] == []
    assert fallback["placement"] == {
        "require_tags": ["eu"],
        "sources": {"header": ["eu"]},
        "excluded": {"us-cloud": "missing tags: eu"},
    }


async def test_a_routes_own_tags_hold_on_its_fallbacks(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await fallback_gateway(
        start_emulator, start_gateway, closed_port_url(), require_tags=["eu"]
    )
    response = await gw.client.post("/v1/chat/completions", json=chat("primary"))
    assert response.status_code == 502
    decision = await decision_of(gw, response)
    assert [a["backend"] for a in decision["attempts"]] == ["eu-gpu"]
    assert decision["fallbacks"][0]["placement"]["sources"] == {"route:primary": ["eu"]}
    # Asked for by name, the fallback route serves: its own requirement is empty.
    direct = await gw.client.post("/v1/chat/completions", json=chat("backup"))
    assert direct.headers["x-switchyard-backend"] == "us-cloud"


async def test_a_fallback_with_the_tag_serves_what_the_primary_cannot(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    eu = await start_emulator()
    gw = await fallback_gateway(start_emulator, start_gateway, eu.base_url)
    response = await gw.client.post(
        "/v1/chat/completions", json=chat("primary"), headers={HEADER: "us"}
    )
    assert response.headers["x-switchyard-backend"] == "us-cloud"
    decision = await decision_of(gw, response)
    assert chain_of(decision) == [
        ("primary", "no backend of route 'primary' has tags us"),
        ("backup", None),
    ]
    assert decision["placement"]["excluded"] == {"eu-gpu": "missing tags: us"}
    assert [a["backend"] for a in decision["attempts"]] == ["us-cloud"]
    # A tag no route of the chain has: what each one lacked, in order.
    unmet = await gw.client.post(
        "/v1/chat/completions", json=chat("primary"), headers={HEADER: "gpu"}
    )
    assert unmet.status_code == 400
    assert unmet.json()["error"]["message"] == (
        "no backend of route 'primary' has tags gpu; no backend of route 'backup' has tags gpu"
    )
    decision = await decision_of(gw, unmet)
    assert chain_of(decision) == [
        ("primary", "no backend of route 'primary' has tags gpu"),
        ("backup", "no backend of route 'backup' has tags gpu"),
    ]


async def test_a_route_that_cannot_serve_now_outranks_an_unmet_fallback(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    """The primary has an allowed member, filtered out for this prompt: the client gets
    that route's 503, not the fallback's 400, which would say it can never be served."""
    eu = await start_emulator()
    gw = await fallback_gateway(start_emulator, start_gateway, eu.base_url, window=256)
    body = chat("primary")
    body["messages"][0]["content"] = "tell me about routing " * 200
    response = await gw.client.post("/v1/chat/completions", json=body, headers={HEADER: "eu"})
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "no_backend_available"
    assert error["message"] == (
        "no backend of route 'primary' with tags eu can serve this request: "
        "no candidates left after context-window-filter"
    )
    decision = await decision_of(gw, response)
    assert [route for route, _ in chain_of(decision)] == ["primary", "backup"]


def test_explain_shows_the_placement_of_each_route() -> None:
    config = make_config(
        {"eu-gpu": "http://127.0.0.1:9/v1", "us-cloud": "http://127.0.0.1:10/v1"},
        profile=WITH_FILTER,
    )
    for backend in config["backends"]:
        backend["tags"] = TAGS[backend["name"]]
    config["routes"] = [
        {"name": "primary", "model": "emulated-model", "backends": ["eu-gpu"]},
        {"name": "backup", "model": "emulated-model", "backends": ["us-cloud"]},
    ]
    config["routes"][0]["fallbacks"] = ["backup"]
    raw = orjson.dumps(chat("primary"))
    result = explain_request(
        parse_config(config), raw, endpoint="chat.completions", headers={HEADER: "US"}
    )
    assert result["order"] == [] and result["placement"]["excluded"] == {
        "eu-gpu": "missing tags: us"
    }
    assert result["route_chain"][0]["left"] == "no backend of route 'primary' has tags us"
    [fallback] = result["fallbacks"]
    assert fallback["order"] == ["us-cloud"]
    assert fallback["placement"] == {
        "require_tags": ["us"],
        "sources": {"header": ["us"]},
        "excluded": {},
    }

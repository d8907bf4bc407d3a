"""Fallback routes over real loopback: a route with no usable candidate, or whose every
attempt fails before its first byte, hands the request to its fallback route; the decision
shows the chain; the attempt budget and the deadline stay the request's."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import orjson
import pytest

from gateway.config.root import parse_config
from gateway.routing.explain import explain_request
from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config

PROFILE = [
    {"ref": "healthy-filter"},
    {"ref": "context-window-filter"},
    {"ref": "round-robin-scorer"},
    {"ref": "max-score-picker"},
]
LONG_PROMPT = "tell me about routing " * 200  # ~1,000 tokens


def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"


def chain_config(primary_url: str, backup_url: str, **sections: Any) -> dict[str, Any]:
    """Route `primary` (model emulated-model on `main`) falls back to route `backup`, whose
    one backend serves another model id."""
    config = make_config({"main": primary_url, "spare": backup_url}, profile=PROFILE)
    config["backends"][1]["models"] = ["backup-model"]
    config["routes"] = [
        {
            "name": "primary",
            "model": "emulated-model",
            "backends": ["main"],
            "fallbacks": ["backup"],
        },
        {"name": "backup", "model": "backup-model", "backends": ["spare"]},
    ]
    config.update(sections)
    return config


def chat(content: str = "hello", *, stream: bool = False) -> dict[str, Any]:
    messages = [{"role": "user", "content": content}]
    return {"model": "primary", "messages": messages, "max_tokens": 5, "stream": stream}


async def decision_of(gw: RunningGateway, response: httpx.Response) -> dict[str, Any]:
    decision_id = response.headers["x-switchyard-decision"]
    found: dict[str, Any] = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    return found


def models_in(response: httpx.Response, stream: bool) -> set[str]:
    if not stream:
        return {response.json()["model"]}
    lines = [ln[6:] for ln in response.content.split(b"\n") if ln.startswith(b"data: {")]
    return {orjson.loads(line)["model"] for line in lines}


def chain_of(decision: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(leg["route"], leg["left"]) for leg in decision["route_chain"]]


async def backup_engine(start_emulator: StartEmulator) -> str:
    return (await start_emulator(models=["backup-model"])).base_url


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_primary_backends_down_fall_back(
    start_emulator: StartEmulator, start_gateway: StartGateway, stream: bool
) -> None:
    gw = await start_gateway(chain_config(closed_port_url(), await backup_engine(start_emulator)))
    response = await gw.client.post("/v1/chat/completions", json=chat(stream=stream))
    assert response.status_code == 200
    assert response.headers["x-switchyard-backend"] == "spare"
    assert models_in(response, stream) == {"primary"}, "the client sees the name it asked for"
    decision = await decision_of(gw, response)
    assert chain_of(decision) == [
        ("primary", "every attempt failed before its first byte (upstream_connect_error)"),
        ("backup", None),
    ]
    assert decision["route_chain"][0]["decision"] == decision["id"]
    assert decision["route_chain"][1]["decision"] == decision["fallbacks"][0]["id"]
    assert decision["fallbacks"][0]["order"] == ["spare"]
    assert [(a["route"], a["backend"], a["model"], a["outcome"]) for a in decision["attempts"]] == [
        ("primary", "main", "emulated-model", "upstream_connect_error"),
        ("backup", "spare", "backup-model", "ok"),
    ]
    assert (decision["served_route"], decision["served_model"]) == ("backup", "backup-model")
    assert all(b["in_flight"] == 0 for b in gw.gateway.state.describe())


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_primary_5xx_before_the_first_byte_falls_back(
    start_emulator: StartEmulator, start_gateway: StartGateway, stream: bool
) -> None:
    main = await start_emulator()
    main.runtime.faults.fail_status = 503
    gw = await start_gateway(chain_config(main.base_url, await backup_engine(start_emulator)))
    response = await gw.client.post("/v1/chat/completions", json=chat(stream=stream))
    assert response.status_code == 200
    assert models_in(response, stream) == {"primary"}
    decision = await decision_of(gw, response)
    assert chain_of(decision) == [
        ("primary", "every attempt failed before its first byte (upstream_503)"),
        ("backup", None),
    ]


async def test_primary_filtered_out_falls_back(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    main = await start_emulator()
    config = chain_config(main.base_url, await backup_engine(start_emulator))
    config["backends"][0]["context_window_tokens"] = 256
    gw = await start_gateway(config)
    response = await gw.client.post("/v1/chat/completions", json=chat(LONG_PROMPT))
    assert response.status_code == 200
    decision = await decision_of(gw, response)
    assert chain_of(decision) == [
        (
            "primary",
            "no backend of route 'primary' can serve this request: "
            "no candidates left after context-window-filter",
        ),
        ("backup", None),
    ]
    [candidate] = decision["candidates"]
    assert candidate["dropped_by"] == "context-window-filter"
    assert candidate["drop_reason"].endswith("+ max_tokens 5 > window 256")
    assert [a["backend"] for a in decision["attempts"]] == ["spare"]
    # A short prompt fits the primary, which serves it itself.
    short = await gw.client.post("/v1/chat/completions", json=chat())
    assert short.headers["x-switchyard-backend"] == "main"
    assert chain_of(await decision_of(gw, short)) == [("primary", None)]


async def test_the_attempt_budget_is_the_requests(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    config = chain_config(closed_port_url(), await backup_engine(start_emulator))
    config["retry"] = {"max_attempts": 1}
    gw = await start_gateway(config)
    response = await gw.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_connect_error"
    decision = await decision_of(gw, response)
    assert chain_of(decision) == [
        (
            "primary",
            "every attempt failed before its first byte (upstream_connect_error); "
            "no attempt left for its fallbacks",
        )
    ]
    assert decision["fallbacks"] == [] and decision["served_route"] is None


async def test_a_client_error_does_not_fall_back(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    main = await start_emulator()
    main.runtime.faults.fail_status = 400
    gw = await start_gateway(chain_config(main.base_url, await backup_engine(start_emulator)))
    response = await gw.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 400
    decision = await decision_of(gw, response)
    assert chain_of(decision) == [("primary", None)]
    assert [a["backend"] for a in decision["attempts"]] == ["main"]


async def test_no_route_of_the_chain_can_serve(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    main = await start_emulator()
    config = chain_config(main.base_url, await backup_engine(start_emulator))
    for backend in config["backends"]:
        backend["context_window_tokens"] = 256
    gw = await start_gateway(config)
    response = await gw.client.post("/v1/chat/completions", json=chat(LONG_PROMPT))
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "no_backend_available"
    assert "route 'backup'" in error["message"]
    decision = await decision_of(gw, response)
    assert [route for route, _ in chain_of(decision)] == ["primary", "backup"]
    assert decision["attempts"] == []


def test_explain_shows_the_fallback_that_would_serve() -> None:
    config = chain_config("http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1")
    config["backends"][0]["context_window_tokens"] = 256
    raw = orjson.dumps(chat(LONG_PROMPT))
    result = explain_request(parse_config(config), raw, endpoint="chat.completions", headers={})
    assert result["order"] == []
    assert [leg["route"] for leg in result["route_chain"]] == ["primary", "backup"]
    assert result["route_chain"][0]["left"] == "no candidates left after context-window-filter"
    [fallback] = result["fallbacks"]
    assert fallback["order"] == ["spare"]
    assert fallback["upstream_models"] == {"spare": "backup-model"}

"""The OpenAI surface: pass-through fidelity, headers, decisions, health and errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.loopback import LoopbackServer
from tests.conftest import StartEmulator, StartGateway, make_config

CHAT: dict[str, Any] = {
    "model": "default",
    "messages": [{"role": "user", "content": "hello"}],
    "max_tokens": 4,
}


class CaptureBackend:
    """A backend that records what it receives and answers with fixed bytes."""

    REPLY = b'{"id":"x","object":"chat.completion","choices":[],"odd_field":  [1, 2]}'

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        self.bodies.append(await request.body())
        self.headers.append(dict(request.headers))
        return Response(self.REPLY, media_type="application/json")


@pytest.fixture
async def capture() -> AsyncIterator[tuple[CaptureBackend, str]]:
    backend = CaptureBackend()
    server = LoopbackServer(backend.app, lifespan="off")
    await server.start()
    yield backend, server.url + "/v1"
    await server.stop()


async def test_request_and_response_bytes_pass_through(
    capture: tuple[CaptureBackend, str], start_gateway: StartGateway
) -> None:
    backend, url = capture
    config = make_config({"cap": url}, model="default")
    gw = await start_gateway(config)
    raw = b'{"model": "default", "messages": [{"role": "user", "content": "hi"}],  "x_v": {"a": 1}}'
    response = await gw.client.post(
        "/v1/chat/completions", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    assert response.content == CaptureBackend.REPLY
    assert backend.bodies == [raw], "same model name: bytes forwarded untouched"


async def test_model_is_rewritten_and_unknown_fields_survive(
    capture: tuple[CaptureBackend, str], start_gateway: StartGateway
) -> None:
    backend, url = capture
    gw = await start_gateway(make_config({"cap": url}, model="upstream-name"))
    body = {**CHAT, "seed": 7, "logit_bias": {"50256": -100}, "vendor_knob": [1, "two"]}
    await gw.client.post("/v1/chat/completions", json=body)
    sent = orjson.loads(backend.bodies[0])
    assert sent == {**body, "model": "upstream-name"}


async def test_provider_key_is_sent_upstream_and_never_back(
    capture: tuple[CaptureBackend, str],
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend, url = capture
    monkeypatch.setenv("CAP_KEY", "sk-secret-provider-key")
    config = make_config({"cap": url})
    config["backends"][0]["api_key_env"] = "CAP_KEY"
    gw = await start_gateway(config)
    response = await gw.client.post(
        "/v1/chat/completions", json=CHAT, headers={"authorization": "Bearer client-key"}
    )
    assert backend.headers[0]["authorization"] == "Bearer sk-secret-provider-key"
    decision = await gw.client.get(
        f"/v1/switchyard/decisions/{response.headers['x-switchyard-decision']}"
    )
    for text in (str(response.headers), response.text, decision.text):
        assert "sk-secret" not in text


async def test_headers_and_decision_lookup(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    a, b = await start_emulator(), await start_emulator()
    profile = [
        {"ref": "healthy-filter"},
        {"ref": "least-load-scorer", "weight": 1.0},
        {"ref": "session-affinity-scorer", "weight": 2.0},
        {"ref": "max-score-picker"},
    ]
    gw = await start_gateway(make_config({"a": a.base_url, "b": b.base_url}, profile=profile))
    served = set()
    for _ in range(4):
        response = await gw.client.post(
            "/v1/chat/completions", json=CHAT, headers={"x-session-id": "conversation-42"}
        )
        served.add(response.headers["x-switchyard-backend"])
    assert len(served) == 1, "one session sticks to one backend"
    decision = (
        await gw.client.get(f"/v1/switchyard/decisions/{response.headers['x-switchyard-decision']}")
    ).json()
    assert decision["chosen"] == served.pop()
    assert decision["status"] == 200
    for candidate in decision["candidates"]:
        assert set(candidate["scores"]) == {"least-load-scorer", "session-affinity-scorer"}
        assert all(s["reason"] for s in candidate["scores"].values())
    assert set(decision["timings_us"]) >= {"healthy-filter", "max-score-picker"}
    missing = await gw.client.get("/v1/switchyard/decisions/feedfacefeedface")
    assert missing.status_code == 404


async def test_decision_ring_is_bounded(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    config = make_config({"only": engine.base_url})
    config["server"] = {"decision_ring_size": 3}
    gw = await start_gateway(config)
    ids = []
    for _ in range(5):
        response = await gw.client.post("/v1/chat/completions", json=CHAT)
        ids.append(response.headers["x-switchyard-decision"])
    assert len(gw.gateway.ring) == 3
    assert (await gw.client.get(f"/v1/switchyard/decisions/{ids[0]}")).status_code == 404
    assert (await gw.client.get(f"/v1/switchyard/decisions/{ids[-1]}")).status_code == 200


async def test_models_health_and_readiness(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    gw = await start_gateway(make_config({"only": engine.base_url}))
    models = (await gw.client.get("/v1/models")).json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["default"]
    assert (await gw.client.get("/healthz")).json() == {"status": "ok"}
    ready = await gw.client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


async def test_stream_passes_usage_and_ends_with_done(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    gw = await start_gateway(make_config({"only": engine.base_url}))
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [ln[6:] for ln in response.content.split(b"\n") if ln.startswith(b"data: ")]
    assert events[-1] == b"[DONE]"
    usage_chunk = orjson.loads(events[-2])
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] == 4
    assert "cached_tokens" in usage_chunk["usage"]["prompt_tokens_details"]

"""`drop_params`: fields a backend must not get are taken out of what it is sent, and only
for that backend."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest

from emulator.loopback import LoopbackServer
from gateway.config.root import parse_config
from gateway.errors import ConfigError
from gateway.routing.drop_params import without_params
from providers.base import ANTHROPIC_MESSAGES, NativeRequest, UpstreamRequest
from tests.conftest import StartGateway, make_config
from tests.gateway.http.test_api import CaptureBackend


@pytest.fixture
async def backend() -> AsyncIterator[tuple[CaptureBackend, str]]:
    captured = CaptureBackend()
    server = LoopbackServer(captured.app, lifespan="off")
    await server.start()
    yield captured, server.url + "/v1"
    await server.stop()


async def test_a_backend_does_not_get_the_fields_it_drops(
    backend: tuple[CaptureBackend, str], start_gateway: StartGateway
) -> None:
    captured, url = backend
    config = make_config({"cap": url}, model="default")
    config["backends"][0]["drop_params"] = ["response_format", "logprobs"]
    gw = await start_gateway(config)
    body = {
        "model": "default",
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_object"},
        "logprobs": True,
        "temperature": 0,
    }
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200
    (sent,) = [orjson.loads(b) for b in captured.bodies]
    assert "response_format" not in sent and "logprobs" not in sent
    assert sent["temperature"] == 0 and sent["messages"] == body["messages"]


@pytest.mark.parametrize("field", ["model", "messages", "stream"])
def test_the_fields_a_request_needs_cannot_be_dropped(field: str) -> None:
    config = make_config({"a": "http://127.0.0.1:9/v1"})
    config["backends"][0]["drop_params"] = [field]
    with pytest.raises(ConfigError) as caught:
        parse_config(config)
    assert any(p.startswith("backends.0.drop_params") for p in caught.value.problems), (
        caught.value.problems
    )


def test_drop_params_reach_the_native_body_too() -> None:
    """A client's own Messages request loses the same fields, by its API's names."""
    doc = {
        "model": "m",
        "max_tokens": 8,
        "top_p": 0.9,
        "stop_sequences": ["END"],
        "temperature": 0.5,
        "messages": [{"role": "user", "content": "hi"}],
    }
    chat = {
        "model": "m",
        "max_tokens": 8,
        "top_p": 0.9,
        "stop": ["END"],
        "temperature": 0.5,
        "messages": [{"role": "user", "content": "hi"}],
    }
    request = UpstreamRequest(
        "/chat/completions",
        orjson.dumps(chat),
        False,
        native=NativeRequest(ANTHROPIC_MESSAGES, orjson.dumps(doc), {}, False),
    )
    dropped = without_params(request, frozenset({"top_p", "stop"}))
    assert orjson.loads(dropped.body).keys() == {"model", "max_tokens", "temperature", "messages"}
    assert dropped.native is not None
    sent = orjson.loads(dropped.native.body)
    assert sent.keys() == {"model", "max_tokens", "temperature", "messages"}

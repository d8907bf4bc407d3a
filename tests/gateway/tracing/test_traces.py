"""Traces through the real gateway, exported over OTLP/HTTP to a real receiver on loopback
that decodes the protobuf: a streamed, a retried and a failed request, with their parents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bench.otlp_receiver import OtlpReceiver, ReceivedSpan
from gateway.tracing.config import TracingConfig
from gateway.tracing.setup import wanted
from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config

CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENT_SPAN = "b7ad6b7169203331"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
CHAT = {"model": "default", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
async def receiver() -> AsyncIterator[OtlpReceiver]:
    found = OtlpReceiver()
    await found.start()
    yield found
    await found.stop()


PRICING = {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0}


def traced_config(receiver: OtlpReceiver, backends: dict[str, str]) -> dict[str, Any]:
    """Backends priced, so that each answer's span says what it cost."""
    tracing = {"enabled": True, "endpoint": receiver.endpoint, "service_name": "sy-test"}
    config = make_config(backends, tracing=tracing)
    for backend in config["backends"]:
        backend["pricing"] = PRICING
    return config


async def traced(
    start_gateway: StartGateway, receiver: OtlpReceiver, backends: dict[str, str]
) -> RunningGateway:
    return await start_gateway(traced_config(receiver, backends))


async def exported(gw: RunningGateway, receiver: OtlpReceiver) -> dict[str, list[ReceivedSpan]]:
    """The spans the receiver decoded, by kind, once the gateway has flushed."""
    assert gw.gateway.tracing is not None
    await gw.gateway.tracing.flush()
    assert receiver.paths and set(receiver.paths) == {"POST /v1/traces"}
    by_kind: dict[str, list[ReceivedSpan]] = {"server": [], "internal": [], "client": []}
    for span in receiver.spans:
        by_kind[span.kind].append(span)
    return by_kind


def one_request(spans: dict[str, list[ReceivedSpan]]) -> tuple[ReceivedSpan, ReceivedSpan]:
    """The server span and the routing span, the latter its child."""
    (server,), (route,) = spans["server"], spans["internal"]
    assert server.name == "POST /v1/chat/completions"
    assert server.service == "sy-test"
    assert route.name == "switchyard.route"
    assert (route.trace_id, route.parent_id) == (server.trace_id, server.span_id)
    assert route.attributes["switchyard.route"] == "default"
    assert route.attributes["switchyard.decision_id"] == server.attributes["switchyard.decision_id"]
    assert route.attributes["switchyard.policy"] == "max-score-picker"
    assert "switchyard.cache_predicted_tokens" in route.attributes
    return server, route


def children(server: ReceivedSpan, clients: list[ReceivedSpan]) -> list[ReceivedSpan]:
    assert all((c.trace_id, c.parent_id) == (server.trace_id, server.span_id) for c in clients)
    return sorted(clients, key=lambda c: c.start_ns)


def priced(span: ReceivedSpan) -> float:
    """What the span's usage costs at `PRICING` (nothing cached: the emulator's first turn)."""
    attributes = span.attributes
    tokens = attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]
    return (
        tokens[0] * PRICING["input_usd_per_mtok"] + tokens[1] * PRICING["output_usd_per_mtok"]
    ) / 1e6


async def test_a_streamed_request_is_a_child_of_the_clients_traceparent(
    start_emulator: StartEmulator, start_gateway: StartGateway, receiver: OtlpReceiver
) -> None:
    engine = await start_emulator()
    gw = await traced(start_gateway, receiver, {"a": engine.base_url})
    body: dict[str, Any] = {
        **CHAT,
        "stream": True,
        "max_tokens": 5,
        "stream_options": {"include_usage": True},
    }
    async with gw.client.stream(
        "POST", "/v1/chat/completions", json=body, headers={"traceparent": TRACEPARENT}
    ) as response:
        text = "".join([chunk async for chunk in response.aiter_text()])
        assert response.status_code == 200, text
    assert "[DONE]" in text
    server, route = one_request(await exported(gw, receiver))
    assert (server.trace_id, server.parent_id) == (CLIENT_TRACE, CLIENT_SPAN)
    assert route.attributes["switchyard.backend"] == "a"
    (client,) = children(server, [s for s in receiver.spans if s.kind == "client"])
    assert client.name == "chat emulated-model"
    assert client.end_ns >= server.start_ns and not client.error and not server.error
    attributes = client.attributes
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai-compatible"
    assert attributes["gen_ai.request.model"] == "emulated-model"
    assert attributes["gen_ai.response.model"] == "emulated-model"
    assert attributes["gen_ai.usage.output_tokens"] == 5
    assert attributes["gen_ai.usage.input_tokens"] > 0
    assert "gen_ai.usage.cache_read.input_tokens" in attributes
    assert attributes["switchyard.cache_hit"] is False
    assert attributes["switchyard.backend"] == "a"
    assert attributes["switchyard.outcome"] == "ok"
    # The stream's finish, read as it was relayed; its cost, as its record is charged.
    assert attributes["gen_ai.response.finish_reasons"] == ["length"]
    assert attributes["switchyard.cost_usd"] == pytest.approx(priced(client))
    assert server.attributes["http.response.status_code"] == 200
    assert server.attributes["gen_ai.usage.output_tokens"] == 5
    assert server.attributes["gen_ai.response.finish_reasons"] == ["length"]
    assert server.attributes["switchyard.cost_usd"] == attributes["switchyard.cost_usd"]


async def test_a_retried_request_has_a_client_span_per_attempt(
    start_emulator: StartEmulator, start_gateway: StartGateway, receiver: OtlpReceiver
) -> None:
    faulty = await start_emulator(faults={"fail_status": 500})
    spare = await start_emulator()
    gw = await traced(start_gateway, receiver, {"a": faulty.base_url, "b": spare.base_url})
    response = await gw.client.post("/v1/chat/completions", json={**CHAT, "max_tokens": 3})
    assert response.status_code == 200, response.text
    assert response.headers["x-switchyard-backend"] == "b"
    spans = await exported(gw, receiver)
    server, _ = one_request(spans)
    assert server.parent_id == ""  # no traceparent from the client: a new trace
    failed, served = children(server, spans["client"])
    assert failed.attributes["switchyard.backend"] == "a" and failed.error
    assert failed.attributes["error.type"] == failed.attributes["switchyard.outcome"]
    assert failed.attributes["switchyard.outcome"] == "upstream_500"
    assert served.attributes["switchyard.backend"] == "b" and not served.error
    assert served.attributes["gen_ai.usage.output_tokens"] == 3
    assert served.attributes["gen_ai.response.finish_reasons"] == ["length"]
    assert "switchyard.cost_usd" not in failed.attributes  # it answered nothing
    assert served.attributes["switchyard.cost_usd"] == pytest.approx(priced(served))
    assert not server.error
    assert server.attributes["switchyard.cost_usd"] == served.attributes["switchyard.cost_usd"]


@pytest.mark.parametrize("status", [500, 400])
async def test_a_failed_request_sets_the_error_status_and_sends_traceparent_upstream(
    start_emulator: StartEmulator, start_gateway: StartGateway, receiver: OtlpReceiver, status: int
) -> None:
    """Every attempt fails: the attempts' spans are errors, and so is the server span when
    the gateway answers 5xx (a client error passed on is not the gateway's). The engine
    quotes the headers it was sent in a 4xx the gateway passes on."""
    faults = {"fail_status": status, "echo_request_headers": True}
    engine = await start_emulator(faults=faults)
    gw = await traced(start_gateway, receiver, {"a": engine.base_url})
    response = await gw.client.post(
        "/v1/chat/completions", json=CHAT, headers={"traceparent": TRACEPARENT}
    )
    assert response.status_code == (502 if status == 500 else status), response.text
    spans = await exported(gw, receiver)
    server, _ = one_request(spans)
    assert server.trace_id == CLIENT_TRACE
    assert server.error is (status == 500)
    assert server.attributes["http.response.status_code"] == response.status_code
    assert server.attributes["error.type"] == f"upstream_{status}"
    attempts = children(server, spans["client"])
    assert attempts and all(a.error for a in attempts)
    assert all((a.trace_id, a.parent_id) == (CLIENT_TRACE, server.span_id) for a in attempts)
    assert "switchyard.cost_usd" not in server.attributes  # no answer: nothing charged
    if status == 400:
        # The engine was sent the CLIENT span's context, not the client's own.
        sent = f"traceparent: 00-{CLIENT_TRACE}-{attempts[0].span_id}-01"
        assert sent in response.text, response.text


async def test_a_refused_request_ends_its_server_span(
    start_emulator: StartEmulator, start_gateway: StartGateway, receiver: OtlpReceiver
) -> None:
    """Refused before any decision (an unknown model): the server span alone, not an error
    of the server's (a 4xx), with the refusal's code."""
    engine = await start_emulator()
    gw = await traced(start_gateway, receiver, {"a": engine.base_url})
    response = await gw.client.post("/v1/chat/completions", json={**CHAT, "model": "nope"})
    assert response.status_code == 404
    spans = await exported(gw, receiver)
    (server,) = spans["server"]
    assert spans["internal"] == spans["client"] == []
    assert server.attributes["http.response.status_code"] == 404
    assert server.attributes["error.type"] == "model_not_found" and not server.error


@pytest.mark.parametrize(
    ("enabled", "environ", "expected"),
    [
        (None, {}, False),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True),
        (False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, False),
        (True, {}, True),
    ],
)
def test_the_environment_turns_tracing_on_unless_the_config_says(
    enabled: bool | None, environ: dict[str, str], expected: bool
) -> None:
    assert wanted(TracingConfig(enabled=enabled), environ) is expected

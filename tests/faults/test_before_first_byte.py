"""Faults before the first byte: the attempt fails, the next candidate serves, the client
sees one clean answer, and the failed attempt is recorded, counted against its backend
(a 429 cools it down instead) and never billed."""

from __future__ import annotations

import pytest

from gateway.telemetry.access_log import concise_line
from tests.conftest import StartEmulator, StartGateway, eventually
from tests.faults.rig import ROUTE, Rig, attempts, chat, sse_data, start_rig

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])


def assert_clean_answer(body: bytes, stream: bool) -> None:
    """A whole answer, or a stream ending with `[DONE]`; either naming the route."""
    if stream:
        data = sse_data(body)
        assert data[-1] == b"[DONE]" and b'"error"' not in body
    else:
        assert b'"choices"' in body
    assert f'"model":"{ROUTE}"'.encode() in body.replace(b" ", b"")


async def assert_served_by_b_alone(rig: Rig, failed_outcome: str) -> None:
    """The record: a's attempt failed with `failed_outcome`, b's served and b's alone is
    billed (usage, cost, the cost metric)."""
    record = await rig.last_record()
    assert record.status == 200 and record.error is None and record.backend == "b"
    assert attempts(record) == [("a", failed_outcome), ("b", "ok")]
    assert record.retries == 1
    line = concise_line(record)
    assert line.startswith(f"{ROUTE} -> b 200 ") and "1 retry" in line and "error" not in line
    assert record.usage is not None and record.usage.completion_tokens > 0
    assert rig.cost_usd(record) > 0
    assert await rig.metric("switchyard_cost_usd_total", backend="a") == 0.0
    assert await rig.metric("switchyard_cost_usd_total", backend="b") > 0.0


async def test_stall_before_first_byte_moves_on(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    rig = await start_rig(start_emulator, start_gateway, timeouts={"first_token_s": 0.3})
    rig.fault("a", stall_before_first_byte_s=5.0)
    response = await rig.client.post("/v1/chat/completions", json=chat(stream=True))
    assert response.status_code == 200
    assert_clean_answer(response.content, stream=True)
    assert rig.received() == {"a": 1, "b": 1}
    await assert_served_by_b_alone(rig, "upstream_timeout")
    assert rig.health()["a"]["failures"] == 1 and rig.health()["b"]["failures"] == 0


async def test_stall_before_a_whole_answer_ends_at_the_deadline(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    """A whole answer's first byte is its last: nothing tells a stall from a long
    generation, so only the request's deadline bounds it (no time is left to retry)."""
    rig = await start_rig(start_emulator, start_gateway, timeouts={"total_s": 0.5})
    rig.fault("a", stall_before_first_byte_s=5.0)
    response = await rig.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "upstream_timeout"
    record = await rig.last_record()
    assert (record.status, record.error, record.backend) == (504, "upstream_timeout", None)
    assert attempts(record) == [("a", "upstream_timeout")]
    assert record.usage is None and rig.cost_usd(record) == 0.0
    assert rig.received()["b"] == 0


@STREAM
async def test_5xx_moves_on(
    start_emulator: StartEmulator, start_gateway: StartGateway, stream: bool
) -> None:
    rig = await start_rig(start_emulator, start_gateway)
    rig.fault("a", fail_status=503)
    response = await rig.client.post("/v1/chat/completions", json=chat(stream=stream))
    assert response.status_code == 200
    assert_clean_answer(response.content, stream)
    assert rig.received() == {"a": 1, "b": 1}
    await assert_served_by_b_alone(rig, "upstream_503")
    assert rig.health()["a"]["failures"] == 1


@STREAM
async def test_429_with_retry_after_cools_the_backend_down(
    start_emulator: StartEmulator, start_gateway: StartGateway, stream: bool
) -> None:
    rig = await start_rig(start_emulator, start_gateway)
    rig.fault("a", fail_status=429, retry_after_s=30)
    response = await rig.client.post("/v1/chat/completions", json=chat(stream=stream))
    assert response.status_code == 200
    assert_clean_answer(response.content, stream)
    await assert_served_by_b_alone(rig, "upstream_429")
    health = rig.health()["a"]
    assert not health["healthy"] and "Retry-After 30.0 s" in str(health["health_reason"])
    assert health["failures"] == 0, "a 429 is a cool-down, not a failure"
    # While it cools down, a is not asked again.
    for _ in range(3):
        again = await rig.client.post("/v1/chat/completions", json=chat(stream=stream))
        assert again.status_code == 200 and again.headers["x-switchyard-backend"] == "b"
    assert rig.received() == {"a": 1, "b": 4}


async def test_200_with_a_malformed_body_moves_on(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    rig = await start_rig(start_emulator, start_gateway)
    rig.fault("a", malformed_body=True)
    response = await rig.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 200
    assert_clean_answer(response.content, stream=False)
    assert response.json()["choices"][0]["message"]["content"]
    assert rig.received() == {"a": 1, "b": 1}
    await assert_served_by_b_alone(rig, "upstream_protocol_error")
    assert rig.health()["a"]["failures"] == 1


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/responses"])
async def test_200_with_a_malformed_body_moves_on_for_translated_apis(
    start_emulator: StartEmulator, start_gateway: StartGateway, path: str
) -> None:
    rig = await start_rig(start_emulator, start_gateway)
    rig.fault("a", malformed_body=True)
    ask = [{"role": "user", "content": "tell me about the fault suite"}]
    body = (
        {"model": ROUTE, "max_tokens": 12, "messages": ask}
        if path == "/v1/messages"
        else {"model": ROUTE, "max_output_tokens": 16, "input": ask}
    )
    response = await rig.client.post(path, json=body)
    assert response.status_code == 200, response.text
    assert rig.received() == {"a": 1, "b": 1}
    await assert_served_by_b_alone(rig, "upstream_protocol_error")


async def test_flapping_backend_loses_no_request(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    """a fails 2 requests, serves 2, fails 2...: every client request is answered, each
    failure retried on b; 2 failures in a row eject a, and a success resets the count."""
    health = {"active_probes": False, "consecutive_failures": 3, "ejection_base_s": 30}
    rig = await start_rig(start_emulator, start_gateway, health=health)
    rig.fault("a", flap_requests=2)
    served: list[str] = []
    for i in range(6):
        response = await rig.client.post("/v1/chat/completions", json=chat(stream=i % 2 == 1))
        assert response.status_code == 200
        assert_clean_answer(response.content, stream=i % 2 == 1)
        served.append(response.headers["x-switchyard-backend"])
    # a: down, down, up, up, down, down; never 3 failures in a row, so never ejected.
    assert served == ["b", "b", "a", "a", "b", "b"]
    assert rig.received() == {"a": 6, "b": 4}
    records = await rig.records(6)
    assert [len(r.decision.attempts) for r in records] == [2, 2, 1, 1, 2, 2]
    assert all(r.status == 200 and r.error is None for r in records)
    for record in records:
        assert record.decision.attempts[-1].backend == record.backend
    health_a = rig.health()["a"]
    assert health_a["healthy"] and health_a["failures"] == 4 and health_a["ejections"] == 0
    assert await rig.metric("switchyard_retries_total", backend="a") == 4.0


async def test_flapping_backend_is_ejected_and_comes_back(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    """Two failures in a row eject a for a short back-off; b serves meanwhile (a is not
    asked); once the back-off ends a serves again and its failure count starts over."""
    health = {
        "active_probes": False,
        "consecutive_failures": 2,
        "ejection_base_s": 0.2,
        "ejection_max_s": 0.2,
    }
    rig = await start_rig(start_emulator, start_gateway, health=health)
    rig.fault("a", flap_requests=2)
    served = [
        (await rig.client.post("/v1/chat/completions", json=chat())).headers["x-switchyard-backend"]
        for _ in range(3)
    ]
    assert served == ["b", "b", "b"]
    assert rig.received() == {"a": 2, "b": 3}, "an ejected backend is not asked"
    ejected = rig.health()["a"]
    assert not ejected["healthy"] and ejected["ejections"] == 1
    assert "ejected after 2 consecutive failures (upstream_503)" in str(ejected["health_reason"])

    async def back() -> bool:
        return bool(rig.health()["a"]["healthy"])

    await eventually(back, "a's ejection to end")
    response = await rig.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 200 and response.headers["x-switchyard-backend"] == "a"
    assert rig.received() == {"a": 3, "b": 3}
    records = await rig.records(4)
    assert [attempts(r) for r in records] == [
        [("a", "upstream_503"), ("b", "ok")],
        [("a", "upstream_503"), ("b", "ok")],
        [("b", "ok")],
        [("a", "ok")],
    ]
    assert all(r.status == 200 and r.error is None for r in records)


async def test_a_stream_that_opens_with_an_error_event_moves_on(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    """An engine that answers 200 and then only an error event has sent the client
    nothing of an answer: as a failure before the first byte, the next candidate serves."""
    rig = await start_rig(start_emulator, start_gateway)
    rig.fault("a", error_event_after_chunks=0)
    response = await rig.client.post("/v1/chat/completions", json=chat(stream=True))
    assert response.status_code == 200
    assert_clean_answer(response.content, stream=True)
    assert rig.received() == {"a": 1, "b": 1}
    await assert_served_by_b_alone(rig, "upstream_stream_error")
    assert rig.health()["a"]["failures"] == 1

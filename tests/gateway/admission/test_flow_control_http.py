"""Flow control through the running gateway, against emulated engines on loopback: a
request that cannot start in time is refused with 429 and Retry-After and leaves a
record; held requests are released as the engine frees up, and say how long they
waited."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.conftest import StartEmulator, StartGateway, make_config
from tests.gateway.telemetry.test_metrics_endpoint import sampled, total

CHAT: dict[str, Any] = {
    "model": "default",
    "messages": [{"role": "user", "content": "hello there " * 50}],
    "max_tokens": 4,
}


async def decision(client: httpx.AsyncClient, response: httpx.Response) -> dict[str, Any]:
    found = await client.get(
        f"/v1/switchyard/decisions/{response.headers['x-switchyard-decision']}"
    )
    assert found.status_code == 200
    described: dict[str, Any] = found.json()
    return described


async def test_a_target_no_backend_can_meet_is_refused_with_a_record(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    config = make_config({"e": engine.base_url})
    config["backends"][0]["cache"] = {"prefill_tokens_per_s": 100}  # ~6 s for this prompt
    gw = await start_gateway(config)
    response = await gw.client.post(
        "/v1/chat/completions", json=CHAT, headers={"x-switchyard-ttft-ms": "500"}
    )
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "deadline_unmeetable"
    assert int(response.headers["retry-after"]) >= 1
    assert response.headers["x-switchyard-admission"] == "deadline_unmeetable"
    held = (await decision(gw.client, response))["held"]
    assert held["outcome"] == "deadline_unmeetable"
    assert "cannot start in time for its TTFT target of 500 ms" in held["reason"]
    assert engine.runtime.stats.received == 0
    # Without a target the same request is served as before flow control.
    served = await gw.client.post("/v1/chat/completions", json=CHAT)
    assert served.status_code == 200
    assert "x-switchyard-admission" not in served.headers
    values = await sampled(gw, "switchyard_admissions_total", 1)
    refused = {"route": "default", "priority": "standard", "outcome": "deadline_unmeetable"}
    assert total(values, "switchyard_admissions_total", **refused) == 1
    assert total(values, "switchyard_requests_total", status_class="4xx") == 1


async def test_an_unknown_priority_is_a_400(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    gw = await start_gateway(make_config({"e": engine.base_url}))
    response = await gw.client.post(
        "/v1/chat/completions", json=CHAT, headers={"x-switchyard-priority": "urgent"}
    )
    assert response.status_code == 400
    assert "unknown class 'urgent'" in response.json()["error"]["message"]


async def test_held_requests_go_as_the_engine_frees_up(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(token_delay_ms=30.0)
    config = make_config({"e": engine.base_url}, flow_control={"enabled": True})
    config["backends"][0]["max_concurrency"] = 1
    gw = await start_gateway(config)

    async def send(priority: str) -> httpx.Response:
        return await gw.client.post(
            "/v1/chat/completions", json=CHAT, headers={"x-switchyard-priority": priority}
        )

    first = asyncio.create_task(send("batch"))
    await asyncio.sleep(0.05)
    rest = [asyncio.create_task(send(p)) for p in ("batch", "interactive", "standard")]
    responses = [await first, *[await task for task in rest]]
    assert [r.status_code for r in responses] == [200] * 4
    assert responses[0].headers["x-switchyard-admission"] == "immediate"
    held = [await decision(gw.client, r) for r in responses[1:]]
    assert all(h["held"]["outcome"] == "queued" for h in held)
    assert all(float(r.headers["x-switchyard-queue-ms"]) > 0 for r in responses[1:])
    # Released by band: interactive, then standard, then the later batch request.
    waited = {h["held"]["priority"]: h["held"]["waited_ms"] for h in held}
    assert waited["interactive"] < waited["standard"] < waited["batch"]
    assert engine.runtime.stats.received == 4
    values = await sampled(gw, "switchyard_queue_wait_seconds_count", 3)
    assert total(values, "switchyard_admissions_total", outcome="queued") == 3
    await sampled(gw, "switchyard_queue_depth", 0)  # the sampler's next tick empties it


async def test_a_stream_past_its_deadline_is_cut_there_with_a_429(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(base_latency_ms=3_000.0)  # the first token 3 s late
    config = make_config({"e": engine.base_url}, flow_control={"cut_at_deadline": True})
    gw = await start_gateway(config)
    started = asyncio.get_running_loop().time()
    response = await gw.client.post(
        "/v1/chat/completions",
        json={**CHAT, "stream": True},
        headers={"x-switchyard-ttft-ms": "400"},
    )
    elapsed = asyncio.get_running_loop().time() - started
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "deadline_unmeetable"
    assert 0.3 < elapsed < 1.5  # at its deadline, not after the engine's 3 s
    attempts = (await decision(gw.client, response))["attempts"]
    assert [a["outcome"] for a in attempts] == ["ttft_deadline"]
    # Not the backend's failure: it is still healthy.
    assert all(b["healthy"] and b["failures"] == 0 for b in gw.gateway.state.describe())

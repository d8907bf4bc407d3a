"""The gateway's prefix bookkeeping end to end: predictions, corrections, learned speeds."""

from __future__ import annotations

from typing import Any

from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config

SYSTEM = "You are a careful assistant who answers briefly. " * 80


def chat(question: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "default",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": question},
        ],
        "max_tokens": 4,
        **extra,
    }


async def decision(gw: RunningGateway, decision_id: str) -> dict[str, Any]:
    response = await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")
    body: dict[str, Any] = response.json()
    return body


async def test_a_repeated_prefix_is_predicted_cached_where_it_went(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    a, b = await start_emulator(), await start_emulator()
    gw = await start_gateway(make_config({"a": a.base_url, "b": b.base_url}))
    first = await gw.client.post("/v1/chat/completions", json=chat("one?", stream=True))
    served = first.headers["x-switchyard-backend"]
    second = await gw.client.post("/v1/chat/completions", json=chat("two?"))
    record = await decision(gw, second.headers["x-switchyard-decision"])
    assert record["prompt_tokens"] > 500
    cached = record["predicted_cached_tokens"]
    other = "b" if served == "a" else "a"
    assert cached[served] > 0.8 * record["prompt_tokens"]
    assert cached[other] == 0


async def test_engine_reports_correct_the_index(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    # The linear emulator never caches (cached_tokens is always 0): each report halves the
    # cache the gateway assumes there, until it predicts no hits at all.
    engine = await start_emulator()
    gw = await start_gateway(make_config({"only": engine.base_url}))
    stream = {"stream": True, "stream_options": {"include_usage": True}}
    predictions = []
    for i in range(16):
        response = await gw.client.post("/v1/chat/completions", json=chat(f"q{i}", **stream))
        record = await decision(gw, response.headers["x-switchyard-decision"])
        predictions.append(record["predicted_cached_tokens"]["only"])
    assert predictions[1] > 0
    assert predictions[-1] == 0
    assert gw.gateway.router.index.capacity_blocks("only") == 0


async def test_decode_speed_is_learned_from_streams(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    slow = await start_emulator(token_delay_ms=15)
    config = make_config({"slow": slow.base_url})
    gw = await start_gateway(config)
    body = chat("count", stream=True, max_tokens=20, stream_options={"include_usage": True})
    for _ in range(8):
        await gw.client.post("/v1/chat/completions", json=body)
    backend = (await gw.client.get("/v1/switchyard/backends")).json()["backends"][0]
    assert 10 < backend["tpot_ms"] < 20 * 1.5, backend
    assert backend["decoding"] == 0 and backend["queued_prefill_tokens"] == 0


async def test_sla_headers_must_be_numbers(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    gw = await start_gateway(make_config({"only": engine.base_url}))
    for value in ("soon", "nan", "inf", "-5", "0"):
        bad = await gw.client.post(
            "/v1/chat/completions", json=chat("x"), headers={"x-switchyard-ttft-ms": value}
        )
        assert bad.status_code == 400, value
        assert "x-switchyard-ttft-ms" in bad.json()["error"]["message"]
    ok = await gw.client.post(
        "/v1/chat/completions", json=chat("x"), headers={"x-switchyard-ttft-ms": "500"}
    )
    assert ok.status_code == 200


async def test_state_reports_index_bounds_and_memory(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(cost_model="batched", time_scale=0.01)
    config = make_config({"only": engine.base_url})
    config["backends"][0]["cache"] = {"capacity_tokens": 4096, "ttl_s": 60}
    gw = await start_gateway(config)
    for i in range(20):  # far more prompt than the assumed cache holds
        await gw.client.post("/v1/chat/completions", json=chat(f"question {i} " * 200))
    state = (await gw.client.get("/v1/switchyard/state")).json()
    index = state["prefix_index"]["backends"]["only"]
    assert index["configured_capacity_blocks"] == 4096 * 4 // 256
    assert 0 < index["blocks_held"] <= index["capacity_blocks"]
    assert state["prefix_index"]["memory_bytes"] > 0
    assert state["fingerprint_cache"]["entries"] > 0

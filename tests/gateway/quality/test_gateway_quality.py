"""Quality scores end to end: real gateway, real emulated engines with injected faults."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from emulator.loopback import LoopbackServer
from emulator.settings import Faults
from tests.conftest import StartEmulator, StartGateway, make_config

PROFILE = [
    {"ref": "healthy-filter"},
    {"ref": "quality-filter"},
    {"ref": "quality-scorer"},
    {"ref": "round-robin-scorer"},
    {"ref": "max-score-picker"},
]
QUALITY: dict[str, Any] = {"probes": {"enabled": False}}


def chat(stream: bool, **extra: Any) -> dict[str, Any]:
    return {
        "model": "default",
        "messages": [{"role": "user", "content": "Tell me about the river and the stone."}],
        "max_tokens": 48,
        "stream": stream,
        **extra,
    }


async def test_looping_backend_is_ejected_and_traffic_moves(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    loops = await start_emulator(faults={"loop_rate": 1.0, "seed": 1})
    twin = await start_emulator()
    config = make_config(
        {"loops": loops.base_url, "twin": twin.base_url}, profile=PROFILE, quality=QUALITY
    )
    gw = await start_gateway(config)
    served: list[str] = []
    for index in range(24):
        response = await gw.client.post("/v1/chat/completions", json=chat(stream=index % 2 == 0))
        assert response.status_code == 200
        served.append(response.headers["x-switchyard-backend"])
    report = (await gw.client.get("/v1/switchyard/quality")).json()
    pairs = {pair["backend"]: pair for pair in report["pairs"]}
    assert pairs["loops"]["state"] == "ejected"
    assert pairs["loops"]["reason"].startswith("looping output")
    assert pairs["loops"]["signals"][0]["signal"] == "repetition"
    assert pairs["twin"]["state"] == "healthy"
    assert pairs["twin"]["fidelity"] == 1.0
    # the ejection kept its evidence, served without a store
    ejection = pairs["loops"]["audit"][-1]
    assert (ejection["from"], ejection["to"]) == ("healthy", "ejected")
    assert ejection["signals"][0]["signal"] == "repetition"
    assert ejection["signals"][0]["bad"] >= 3
    assert pairs["twin"]["audit"] == []
    # demoted within its first 10 requests, then (explore share aside) no more traffic
    first_half, second_half = served[:12], served[12:]
    assert first_half.count("loops") <= 10
    assert second_half.count("loops") <= 1
    decision = response.headers["x-switchyard-decision"]
    record = (await gw.client.get(f"/v1/switchyard/decisions/{decision}")).json()
    loops_report = next(c for c in record["candidates"] if c["backend"] == "loops")
    assert "looping output" in str(loops_report)


async def test_failed_attempts_count_as_errors_but_429_does_not(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    broken = await start_emulator(faults={"fail_status": 503})
    limited = await start_emulator(faults={"fail_status": 429, "retry_after_s": 0})
    twin = await start_emulator()
    backends = {"broken": broken.base_url, "limited": limited.base_url, "twin": twin.base_url}
    config = make_config(
        backends,
        profile=PROFILE,
        quality=QUALITY,
        health={"active_probes": False, "consecutive_failures": 100},
    )
    gw = await start_gateway(config)
    for _ in range(9):
        response = await gw.client.post("/v1/chat/completions", json=chat(stream=False))
        assert response.status_code == 200
    pairs = {
        p["backend"]: p for p in (await gw.client.get("/v1/switchyard/quality")).json()["pairs"]
    }
    errors = next(s for s in pairs["broken"]["signals"] if s["signal"] == "error")
    assert errors["bad"] > 0
    assert "limited" not in pairs  # rate limiting is capacity, not quality


async def test_probes_flag_a_substituted_model(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    swapped = await start_emulator()
    twin = await start_emulator()
    third = await start_emulator()
    backends = {"swapped": swapped.base_url, "twin": twin.base_url, "third": third.base_url}
    quality = {"probes": {"interval_s": 3600, "needle_tokens": 512}}
    gw = await start_gateway(make_config(backends, profile=PROFILE, quality=quality))
    prober = gw.gateway.prober
    assert prober is not None
    await prober.run_cycle()  # baselines from healthy engines
    swapped.runtime.faults = Faults(substitute_model=True)
    await prober.run_cycle()
    report = (await gw.client.get("/v1/switchyard/quality")).json()
    pairs = {p["backend"]: p for p in report["pairs"]}
    assert pairs["swapped"]["state"] == "ejected"
    assert "canary logprob drift" in pairs["swapped"]["reason"]
    assert pairs["twin"]["state"] == "healthy"
    assert report["probes"]["tokens"] > 0
    kinds = {r["kind"] for r in report["probes"]["recent"]}
    assert kinds == {"canary", "tool_call", "needle"}
    assert all(r["ok"] for r in report["probes"]["recent"] if r["backend"] != "swapped")


async def test_probe_budget_is_per_backend_and_enforced(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    cheap = await start_emulator()
    rich = await start_emulator()
    config = make_config({"cheap": cheap.base_url, "rich": rich.base_url}, quality=QUALITY)
    config["quality"] = {"probes": {"interval_s": 3600, "needle_tokens": 256}}
    config["backends"][0]["probes"] = {"max_tokens_per_hour": 60, "needle": False}
    gw = await start_gateway(config)
    prober = gw.gateway.prober
    assert prober is not None
    results = await prober.run_cycle()
    cheap_results = [r for r in results if r.backend == "cheap"]
    assert [r.kind for r in cheap_results] == ["canary", "canary", "canary", "tool_call"]
    assert any(r.detail == "over budget" for r in cheap_results)
    assert sum(r.tokens for r in cheap_results) <= 60
    assert all(r.ok for r in results if r.backend == "rich")
    status = prober.status()
    assert status["backends"]["cheap"]["spent_last_hour"] <= 60
    assert status["skipped_over_budget"] >= 1


async def test_odd_probe_answers_are_evidence_not_crashes(start_gateway: StartGateway) -> None:
    async def chat(request: Request) -> JSONResponse:
        # logprobs as a list, a null logprob, usage counts that are not numbers
        body = {
            "choices": [{"message": {"content": None}, "logprobs": [{"logprob": None}]}],
            "usage": {"prompt_tokens": "many", "completion_tokens": None},
        }
        return JSONResponse(body)

    server = LoopbackServer(
        Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])]),
        lifespan="off",
    )
    await server.start()
    try:
        config = make_config({"odd": server.url + "/v1"})
        config["quality"] = {"probes": {"interval_s": 3600, "needle_tokens": 128}}
        gw = await start_gateway(config)
        assert gw.gateway.prober is not None
        results = await gw.gateway.prober.run_cycle()
        assert [r.kind for r in results] == ["canary", "canary", "canary", "tool_call", "needle"]
        assert all(r.ok is False for r in results)
        report = (await gw.client.get("/v1/switchyard/quality")).json()
        assert report["pairs"][0]["signals"]  # evidence was recorded
        assert all(s["last_bad"] is None for s in report["pairs"][0]["signals"])  # hidden
    finally:
        await server.stop()

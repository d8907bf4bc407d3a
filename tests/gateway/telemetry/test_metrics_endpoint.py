"""Prometheus /metrics and the dashboard's data, against a real gateway and engines."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually, make_config

PRICES = {"input_usd_per_mtok": 1.0, "cached_input_usd_per_mtok": 0.1, "output_usd_per_mtok": 4.0}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def total(
    values: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    wanted = set(labels.items())
    return sum(v for (n, ls), v in values.items() if n == name and wanted <= set(ls))


async def drained(gw: RunningGateway, count: int) -> None:
    pipe = gw.gateway.telemetry.pipe

    async def consumed() -> bool:
        return pipe.consumed >= count

    await eventually(consumed, f"telemetry consumed {count} records")


async def sampled(
    gw: RunningGateway, name: str, value: float, **labels: str
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The metrics once the sampler's tick (once a second) has set `name` to `value`."""
    scraped: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    async def seen() -> bool:
        nonlocal scraped
        scraped = samples((await gw.client.get("/metrics")).text)
        return total(scraped, name, **labels) == value

    await eventually(seen, f"{name}{labels} == {value}")
    return scraped


@pytest.fixture
async def gateway(start_emulator: StartEmulator, start_gateway: StartGateway) -> RunningGateway:
    a = await start_emulator(models=["emulated-model"])
    b = await start_emulator(models=["emulated-model"])
    config: dict[str, Any] = make_config(
        {"a": a.base_url, "b": b.base_url, "dead": "http://127.0.0.1:9/v1"}
    )
    for backend in config["backends"]:
        backend["pricing"] = PRICES
    return await start_gateway(config)


async def test_metrics_count_every_request_token_and_dollar(gateway: RunningGateway) -> None:
    body = {"model": "default", "messages": [{"role": "user", "content": "count me"}]}
    usages = []
    for i in range(6):
        stream = i % 3 == 0
        payload = {**body, "max_tokens": 5, "stream": stream}
        if stream:
            payload["stream_options"] = {"include_usage": True}
        r = await gateway.client.post("/v1/chat/completions", json=payload)
        assert r.status_code == 200
        if not stream:
            usages.append(r.json()["usage"])
    await drained(gateway, 6)
    r = await gateway.client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    values = samples(r.text)
    assert total(values, "switchyard_requests_total", route="default", status_class="2xx") == 6
    assert total(values, "switchyard_requests_total", backend="dead") == 0
    # round-robin reaches the dead backend; each such attempt is retried elsewhere
    assert total(values, "switchyard_retries_total", backend="dead") >= 1
    assert total(values, "switchyard_time_to_first_token_seconds_count") == 2
    assert total(values, "switchyard_request_duration_seconds_count") == 6
    prompt = total(values, "switchyard_prompt_tokens_total")
    completion = total(values, "switchyard_completion_tokens_total")
    assert completion == 30  # exactly max_tokens from the emulator
    assert prompt >= sum(u["prompt_tokens"] for u in usages)
    cached = total(values, "switchyard_cached_prompt_tokens_total")
    expected = ((prompt - cached) * 1.0 + cached * 0.1 + completion * 4.0) / 1e6
    assert total(values, "switchyard_cost_usd_total") == pytest.approx(expected)
    assert total(values, "switchyard_decisions_total") == 6
    assert total(values, "switchyard_gateway_overhead_seconds_count", route="default") == 6


async def test_gauges_follow_live_state(gateway: RunningGateway) -> None:
    values = await sampled(gateway, "switchyard_backend_healthy", 1, backend="a")
    assert total(values, "switchyard_in_flight_requests", backend="a") == 0


async def test_dashboard_data_and_pages(gateway: RunningGateway) -> None:
    for _ in range(4):
        payload = {"model": "default", "messages": [{"role": "user", "content": "x"}]}
        assert (await gateway.client.post("/v1/chat/completions", json=payload)).status_code == 200
    await drained(gateway, 4)
    data = (await gateway.client.get("/v1/switchyard/dashboard?window_s=300")).json()
    assert data["fleet"]["summary"]["requests"] == 4
    assert data["fleet"]["summary"]["success_rate"] == 1.0
    by_name = {b["name"]: b for b in data["backends"]}
    assert set(by_name) == {"a", "b", "dead"}
    assert by_name["dead"]["summary"]["requests"] == 0
    shares = [b["summary"]["share"] for b in data["backends"]]
    assert sum(shares) == pytest.approx(1.0)
    assert len(data["fleet"]["series"]["t"]) == 300 // data["bucket_s"]
    assert data["store"] == {"enabled": False}
    page = await gateway.client.get("/dashboard")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    missing = await gateway.client.get("/dashboard/static/..%2Fdata.py")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


async def test_dashboard_data_needs_a_key_when_auth_is_on(
    start_emulator: StartEmulator, start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await start_emulator(models=["emulated-model"])
    monkeypatch.setenv("SWITCHYARD_TEST_KEYS", "sk-dash-1")
    gw = await start_gateway(
        make_config({"a": a.base_url}, server={"api_keys_env": "SWITCHYARD_TEST_KEYS"})
    )
    denied = await gw.client.get("/v1/switchyard/dashboard")
    assert denied.status_code == 401 and denied.json()["error"]["type"]
    allowed = await gw.client.get(
        "/v1/switchyard/dashboard", headers={"authorization": "Bearer sk-dash-1"}
    )
    assert allowed.status_code == 200
    # The page and /metrics stay open (no keys, prompts or text in them), like /readyz.
    assert (await gw.client.get("/dashboard")).status_code == 200
    metrics = await gw.client.get("/metrics")
    assert metrics.status_code == 200 and "sk-dash-1" not in metrics.text


async def test_requests_refused_before_routing_are_counted(gateway: RunningGateway) -> None:
    bad_json = await gateway.client.post("/v1/chat/completions", content=b"{nope")
    unknown = await gateway.client.post(
        "/v1/chat/completions",
        json={"model": "ghost", "messages": [{"role": "user", "content": "x"}]},
    )
    assert (bad_json.status_code, unknown.status_code) == (400, 404)
    values = await sampled(gateway, "switchyard_rejected_requests_total", 2)
    assert total(values, "switchyard_rejected_requests_total", code="model_not_found") == 1
    assert total(values, "switchyard_requests_total") == 0  # no record: no backend involved


async def test_bad_dashboard_parameters_get_an_openai_error(gateway: RunningGateway) -> None:
    r = await gateway.client.get("/v1/switchyard/dashboard?window_s=5")
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == "window_s"


async def test_finished_decisions_are_kept_as_bytes_and_still_explained(
    gateway: RunningGateway,
) -> None:
    r = await gateway.client.post(
        "/v1/chat/completions",
        json={"model": "default", "messages": [{"role": "user", "content": "why"}]},
    )
    decision_id = r.headers["x-switchyard-decision"]
    before = (await gateway.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    await drained(gateway, 1)
    held = gateway.gateway.ring.get(decision_id)
    assert held is not None
    # What the cyclic collector would have to walk is gone; the explanation is not.
    assert held.decision.candidates == () and held.work.fingerprint is None
    after = (await gateway.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    assert after == before
    assert {c["backend"] for c in after["candidates"]} == {"a", "b", "dead"}
    assert all(c["scores"] or c["dropped_by"] for c in after["candidates"])

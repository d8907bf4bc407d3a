"""Budgets through the real app against emulated engines with prices: a key's spent day
budget is refused with 429 and its headers, a spent route falls back to a cheaper one,
and two gateways share spend through Redis."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.tenancy.budgets.windows import counters_of, window_of
from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually, make_config
from tests.gateway.tenancy.test_keys_http import ADMIN, SECRET_ENV, bearer, create, secrets_in_env

__all__ = ["secrets_in_env"]

FEE_USD = 0.4
"""What one answer of the priced engine costs (a fee per request)."""
FAST = {"flush_ms": 20, "refresh_ms": 20}


@pytest.fixture(autouse=True)
def same_utc_day() -> None:
    """Spend counts in the UTC day it happened: a test must not straddle midnight."""
    if window_of("day", time.time()).seconds_left(time.time()) < 120:
        pytest.skip("too close to UTC midnight: the day's budget would roll over mid-test")


def chat(model: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


async def priced_config(start_emulator: StartEmulator, **sections: Any) -> dict[str, Any]:
    pricey, cheap = await start_emulator(), await start_emulator()
    config = make_config({"pricey": pricey.base_url, "cheap": cheap.base_url}, **sections)
    config["backends"][0]["pricing"] = {"request_usd": FEE_USD}
    config["routes"] = [
        {"name": "default", "model": "emulated-model", "backends": ["pricey"]},
        {"name": "cheap", "model": "emulated-model", "backends": ["cheap"]},
    ]
    return config


async def spent_reaches(gw: RunningGateway, usd: float, key_id: str | None = None) -> None:
    async def check() -> bool:
        if key_id is not None:
            got = await gw.client.get(f"/v1/switchyard/admin/keys/{key_id}", headers=ADMIN)
            return bool(got.json()["spend"]["day"]["spent_usd"] >= usd - 1e-9)
        state = await gw.client.get("/v1/switchyard/state")
        return bool(state.json()["tenancy"]["budgets"]["queued"] == 0) and await _route(gw, usd)

    await eventually(check, f"spend of {usd} USD counted")


async def _route(gw: RunningGateway, usd: float) -> bool:
    ledger = gw.gateway.tenancy.budgets.ledger
    day, _ = counters_of("route", "default", time.time())
    return ledger.total(day) >= usd - 1e-9


def assert_budget_refusal(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("insufficient_quota", "budget_exceeded")
    assert "resets at" in error["message"] and "(UTC)" in error["message"]
    assert int(response.headers["retry-after"]) >= 1
    assert response.headers["x-switchyard-budget-remaining-usd"] == "0"


async def test_a_key_whose_day_budget_is_spent_gets_429_with_headers(
    start_emulator: StartEmulator, start_gateway: StartGateway, tmp_path: Path
) -> None:
    config = await priced_config(
        start_emulator,
        server={"admin_keys_env": "SY_TEST_ADMIN_KEYS"},
        store={"url": f"sqlite+aiosqlite:///{tmp_path / 'keys.db'}", "flush_interval_s": 0.05},
        keys={"enabled": True, "secret_env": SECRET_ENV},
        budgets=FAST,
    )
    gw = await start_gateway(config)
    made = await create(gw, name="svc", team="search", budget_usd_per_day=1.0)
    key, key_id = bearer(made["key"]), made["id"]
    remaining = []
    for n in range(1, 4):
        ok = await gw.client.post("/v1/chat/completions", json=chat("default"), headers=key)
        assert ok.status_code == 200, ok.text
        remaining.append(ok.headers["x-switchyard-budget-remaining-usd"])
        assert ok.headers["x-switchyard-budget-limit-usd"] == "1"
        assert ok.headers["x-switchyard-budget-scope"] == "key day"
        assert ok.headers["x-switchyard-budget-reset"].endswith("T00:00:00Z")
        await spent_reaches(gw, n * FEE_USD, key_id)
    assert remaining == ["1", "0.6", "0.2"]
    refused = await gw.client.post("/v1/chat/completions", json=chat("default"), headers=key)
    assert_budget_refusal(refused)
    assert f"key {key_id}" in refused.json()["error"]["message"]
    messages = {
        "model": "default",
        "max_tokens": 4,
        "messages": [{"role": "user", "content": "hi"}],
    }
    anthropic = await gw.client.post("/v1/messages", json=messages, headers=key)
    assert anthropic.status_code == 429
    assert anthropic.json()["error"]["type"] == "rate_limit_error"
    assert "x-switchyard-budget-reset" in anthropic.headers
    listed = await gw.client.get("/v1/switchyard/admin/keys", headers=ADMIN)
    (row,) = listed.json()["data"]
    assert row["budget_usd_per_day"] == 1.0
    assert row["spend"]["day"]["spent_usd"] == pytest.approx(3 * FEE_USD)
    metrics = (await gw.client.get("/metrics")).text
    assert 'switchyard_team_spend_usd_total{team="search"} 1.2' in metrics
    assert gw.gateway.telemetry.refusals.counted("budget_exceeded") == 2


async def test_a_spent_route_falls_back_to_the_cheaper_route(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    route_budget = {"usd_per_day": 0.5, "on_exhausted": "fallback", "fallback_route": "cheap"}
    config = await priced_config(
        start_emulator, budgets={**FAST, "routes": {"default": route_budget}}
    )
    gw = await start_gateway(config)
    for _ in range(2):
        ok = await gw.client.post("/v1/chat/completions", json=chat("default"))
        assert ok.headers["x-switchyard-backend"] == "pricey"
    await spent_reaches(gw, 2 * FEE_USD)
    moved = await gw.client.post("/v1/chat/completions", json=chat("default"))
    assert moved.status_code == 200, moved.text
    assert moved.headers["x-switchyard-backend"] == "cheap"
    assert moved.headers["x-switchyard-budget-rerouted-from"] == "default"
    assert moved.json()["model"] == "cheap"
    assert gw.gateway.tenancy.budgets.status()["rerouted"] == 1
    metrics = (await gw.client.get("/metrics")).text
    assert 'switchyard_route_budget_limit_usd{route="default",window="day"} 0.5' in metrics


async def test_two_gateways_share_a_route_budget_through_redis(
    start_emulator: StartEmulator, start_gateway: StartGateway, namespace: str
) -> None:
    shared = {"backend": "redis", "namespace": namespace, **FAST}
    budgets = {**shared, "routes": {"default": {"usd_per_day": 1.0}}}
    first = await start_gateway(await priced_config(start_emulator, budgets=budgets))
    second = await start_gateway(await priced_config(start_emulator, budgets=budgets))
    for _ in range(3):
        ok = await first.client.post("/v1/chat/completions", json=chat("default"))
        assert ok.status_code == 200, ok.text
    await spent_reaches(first, 3 * FEE_USD)
    await eventually(lambda: _route(second, 3 * FEE_USD), "the second gateway sees the spend")
    refused = await second.client.post("/v1/chat/completions", json=chat("default"))
    assert_budget_refusal(refused)
    assert "route default" in refused.json()["error"]["message"]
    assert refused.headers["x-switchyard-budget-scope"] == "route day"
    status = (await second.client.get("/v1/switchyard/state")).json()["tenancy"]["budgets"]
    assert status["backend"] == "redis" and status["redis"] == "up"


async def test_a_keys_budget_is_edited_through_the_admin_api(
    start_emulator: StartEmulator, start_gateway: StartGateway, tmp_path: Path
) -> None:
    config = await priced_config(
        start_emulator,
        server={"admin_keys_env": "SY_TEST_ADMIN_KEYS"},
        store={"url": f"sqlite+aiosqlite:///{tmp_path / 'keys.db'}", "flush_interval_s": 0.05},
        keys={"enabled": True, "secret_env": SECRET_ENV},
        budgets=FAST,
    )
    gw = await start_gateway(config)
    made = await create(gw, name="svc")
    key = bearer(made["key"])
    free = await gw.client.post("/v1/chat/completions", json=chat("default"), headers=key)
    assert "x-switchyard-budget-limit-usd" not in free.headers
    await spent_reaches(gw, FEE_USD, made["id"])
    path = f"/v1/switchyard/admin/keys/{made['id']}"
    edit = {"budget_usd_per_month": 0.4, "budget_on_exhausted": "fallback"}
    changed = await gw.client.patch(path, json=edit, headers=ADMIN)
    assert changed.status_code == 200, changed.text
    assert changed.json()["budget_usd_per_month"] == 0.4
    # Spent this month already; set to fall back, it goes on the `fallbacks` of the route,
    # which has none: refused after all.
    refused = await gw.client.post("/v1/chat/completions", json=chat("default"), headers=key)
    assert_budget_refusal(refused)
    assert refused.headers["x-switchyard-budget-scope"] == "key month"
    bad = await gw.client.patch(path, json={"budget_usd_per_day": -1}, headers=ADMIN)
    assert bad.status_code == 400
    cleared = await gw.client.patch(path, json={"budget_usd_per_month": None}, headers=ADMIN)
    assert cleared.json()["budget_usd_per_month"] is None
    again = await gw.client.post("/v1/chat/completions", json=chat("default"), headers=key)
    assert again.status_code == 200, again.text


async def test_failed_attempts_are_not_billed(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    failing = await start_emulator(faults={"fail_status": 503})
    cheap = await start_emulator()
    config = make_config(
        {"pricey": failing.base_url, "cheap": cheap.base_url},
        budgets={**FAST, "routes": {"default": {"usd_per_day": 10.0}}},
    )
    config["backends"][0]["pricing"] = {"request_usd": FEE_USD}
    config["backends"][1]["pricing"] = {"request_usd": 0.1}
    gw = await start_gateway(config)
    for _ in range(2):
        ok = await gw.client.post("/v1/chat/completions", json=chat("default"))
        assert ok.status_code == 200 and ok.headers["x-switchyard-backend"] == "cheap"
    await spent_reaches(gw, 0.2)
    ledger = gw.gateway.tenancy.budgets.ledger
    day, _ = counters_of("route", "default", time.time())
    assert ledger.total(day) == pytest.approx(0.2)
    metrics = (await gw.client.get("/metrics")).text
    assert (
        'switchyard_retries_total{backend="pricey",outcome="upstream_503",route="default"}'
        in metrics
    )

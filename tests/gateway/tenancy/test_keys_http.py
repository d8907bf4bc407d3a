"""Virtual keys, the admin API and limits through the real app, against an emulated engine,
with the store on SQLite in a temporary directory."""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually, make_config
from tests.gateway.store.rows import read_rows

SECRET_ENV = "SY_TEST_KEY_SECRET"
ADMIN = {"authorization": "Bearer admin-key-1"}
CHAT = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
MESSAGES = {
    "model": "default",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


def stored_keys(store_url: str) -> str:
    with closing(sqlite3.connect(store_url.split("///", 1)[1])) as db:
        return str(db.execute("SELECT * FROM client_keys").fetchall())


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'keys.db'}"


@pytest.fixture(autouse=True)
def secrets_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, "s" * 40)
    monkeypatch.setenv("SY_TEST_ADMIN_KEYS", "admin-key-1")
    monkeypatch.setenv("SY_TEST_STATIC_KEYS", "static-key-1")
    monkeypatch.setenv("SY_TEST_METRICS_TOKEN", "metrics-token-1")


async def keyed_gateway(
    start_emulator: StartEmulator, start_gateway: StartGateway, store_url: str, **sections: Any
) -> RunningGateway:
    engine = await start_emulator()
    config = make_config(
        {"a": engine.base_url},
        server={"admin_keys_env": "SY_TEST_ADMIN_KEYS", **sections.pop("server", {})},
        store={"url": store_url, "flush_interval_s": 0.05},
        keys={"enabled": True, "secret_env": SECRET_ENV},
        **sections,
    )
    config["routes"].append({"name": "other", "model": "emulated-model", "backends": ["a"]})
    return await start_gateway(config)


async def create(gw: RunningGateway, **spec: Any) -> dict[str, Any]:
    response = await gw.client.post("/v1/switchyard/admin/keys", json=spec, headers=ADMIN)
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    return made


def assert_openai_error(response: httpx.Response, status: int, kind: str, code: str) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["type"], error["code"]) == (kind, code)
    assert set(error) == {"message", "type", "param", "code"}


async def test_a_virtual_key_works_on_its_routes_until_revoked(
    start_emulator: StartEmulator, start_gateway: StartGateway, store_url: str
) -> None:
    gw = await keyed_gateway(start_emulator, start_gateway, store_url)
    made = await create(gw, name="search", routes=["default"], team="search")
    key = made["key"]
    assert made["prefix"] == key[:16] and made["status"] == "active"
    ok = await gw.client.post("/v1/chat/completions", json=CHAT, headers=bearer(key))
    assert ok.status_code == 200, ok.text
    for wrong in ({}, bearer("sk-sy-" + "a" * 53), bearer(key[:-2] + "zz")):
        refused = await gw.client.post("/v1/chat/completions", json=CHAT, headers=wrong)
        assert_openai_error(refused, 401, "authentication_error", "invalid_api_key")
    elsewhere = await gw.client.post(
        "/v1/chat/completions", json={**CHAT, "model": "other"}, headers=bearer(key)
    )
    assert_openai_error(elsewhere, 403, "permission_error", "permission_denied")
    models = await gw.client.get("/v1/models", headers=bearer(key))
    assert [m["id"] for m in models.json()["data"]] == ["default"]
    revoked = await gw.client.delete(f"/v1/switchyard/admin/keys/{made['id']}", headers=ADMIN)
    assert revoked.json()["status"] == "revoked"
    after = await gw.client.post("/v1/chat/completions", json=CHAT, headers=bearer(key))
    assert_openai_error(after, 401, "authentication_error", "invalid_api_key")


async def test_a_rotated_key_replaces_the_old_one(
    start_emulator: StartEmulator, start_gateway: StartGateway, store_url: str
) -> None:
    gw = await keyed_gateway(start_emulator, start_gateway, store_url)
    made = await create(gw, name="svc")
    rotated = await gw.client.post(f"/v1/switchyard/admin/keys/{made['id']}/rotate", headers=ADMIN)
    assert rotated.status_code == 200 and rotated.json()["id"] == made["id"]
    new = rotated.json()["key"]
    old = await gw.client.post("/v1/chat/completions", json=CHAT, headers=bearer(made["key"]))
    assert old.status_code == 401
    fresh = await gw.client.post("/v1/chat/completions", json=CHAT, headers=bearer(new))
    assert fresh.status_code == 200


async def test_the_admin_api_and_operator_data_need_the_admin_key(
    start_emulator: StartEmulator, start_gateway: StartGateway, store_url: str
) -> None:
    gw = await keyed_gateway(start_emulator, start_gateway, store_url)
    key = (await create(gw, name="client"))["key"]
    for path in (
        "/v1/switchyard/admin/keys",
        "/v1/switchyard/dashboard",
        "/v1/switchyard/decisions/0123456789abcdef",
        "/v1/switchyard/backends",
        "/v1/switchyard/state",
    ):
        none = await gw.client.get(path)
        assert_openai_error(none, 401, "authentication_error", "invalid_api_key")
        client = await gw.client.get(path, headers=bearer(key))
        assert_openai_error(client, 403, "permission_error", "permission_denied")
    listed = await gw.client.get("/v1/switchyard/admin/keys", headers=ADMIN)
    assert [k["name"] for k in listed.json()["data"]] == ["client"]
    state = await gw.client.get("/v1/switchyard/state", headers=ADMIN)
    assert state.json()["tenancy"]["keys"]["keys"] == 1
    bad = await gw.client.post(
        "/v1/switchyard/admin/keys", json={"name": "x", "routes": ["nope"]}, headers=ADMIN
    )
    assert_openai_error(bad, 400, "invalid_request_error", "invalid_request")
    edit = await gw.client.patch(
        "/v1/switchyard/admin/keys/key_000000000000", json={"rpm": 3}, headers=ADMIN
    )
    assert edit.status_code == 404


async def test_static_keys_still_work_beside_virtual_ones(
    start_emulator: StartEmulator, start_gateway: StartGateway, store_url: str
) -> None:
    gw = await keyed_gateway(
        start_emulator, start_gateway, store_url, server={"api_keys_env": "SY_TEST_STATIC_KEYS"}
    )
    ok = await gw.client.post("/v1/chat/completions", json=CHAT, headers=bearer("static-key-1"))
    assert ok.status_code == 200
    admin_as_client = await gw.client.post("/v1/chat/completions", json=CHAT, headers=ADMIN)
    assert admin_as_client.status_code == 401


async def test_a_key_over_its_limit_gets_429_with_openais_headers(
    start_emulator: StartEmulator, start_gateway: StartGateway, store_url: str
) -> None:
    gw = await keyed_gateway(start_emulator, start_gateway, store_url)
    key = (await create(gw, name="slow", rpm=1, tpm=10_000))["key"]
    first = await gw.client.post("/v1/chat/completions", json=CHAT, headers=bearer(key))
    assert first.status_code == 200
    assert first.headers["x-ratelimit-remaining-requests"] == "0"
    assert first.headers["x-ratelimit-limit-tokens"] == "10000"
    second = await gw.client.post("/v1/chat/completions", json=CHAT, headers=bearer(key))
    assert_openai_error(second, 429, "requests", "rate_limit_exceeded")
    assert second.headers["retry-after"] == "60"
    for name in ("limit", "remaining", "reset"):
        for kind in ("requests", "tokens"):
            assert f"x-ratelimit-{name}-{kind}" in second.headers
    assert second.headers["x-ratelimit-reset-requests"].endswith("s")
    anthropic = await gw.client.post(
        "/v1/messages", json=MESSAGES, headers={"x-api-key": key, "anthropic-version": "x"}
    )
    assert anthropic.status_code == 429 and anthropic.headers["retry-after"] == "60"
    body = anthropic.json()
    assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
    assert anthropic.headers["x-ratelimit-remaining-requests"] == "0"


async def test_route_limits_hold_in_process_when_redis_is_unreachable(
    start_emulator: StartEmulator, start_gateway: StartGateway, store_url: str
) -> None:
    gw = await keyed_gateway(
        start_emulator,
        start_gateway,
        store_url,
        limits={
            "backend": "redis",
            "redis_url": "redis://127.0.0.1:9/0",
            "timeout_ms": 200,
            "routes": {"default": {"rpm": 2}},
        },
    )
    key = (await create(gw, name="any"))["key"]
    statuses = [
        (await gw.client.post("/v1/chat/completions", json=CHAT, headers=bearer(key))).status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 429]
    state = await gw.client.get("/v1/switchyard/state", headers=ADMIN)
    assert state.json()["tenancy"]["limits"]["redis"] == "down"


async def test_the_key_never_shows_but_its_id_and_team_do(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    store_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    gw = await keyed_gateway(
        start_emulator,
        start_gateway,
        store_url,
        server={"metrics_token_env": "SY_TEST_METRICS_TOKEN"},
        telemetry={"access_log": "json"},
    )
    made = await create(gw, name="search", team="search", rpm=100)
    key = made["key"]
    ok = await gw.client.post("/v1/chat/completions", json=CHAT, headers=bearer(key))
    bad = await gw.client.post("/v1/chat/completions", json=CHAT, headers=bearer(key + "x"))
    assert (ok.status_code, bad.status_code) == (200, 401)
    decision = ok.headers["x-switchyard-decision"]

    async def recorded() -> bool:
        return len(await read_rows(store_url, "requests")) >= 1

    await eventually(recorded, "the request's record written")
    rows = await read_rows(store_url, "requests")
    assert (rows[0]["key_id"], rows[0]["team"]) == (made["id"], "search")
    assert (await gw.client.get("/metrics")).status_code == 401
    metrics = await gw.client.get("/metrics", headers=bearer("metrics-token-1"))
    assert 'switchyard_team_requests_total{status_class="2xx",team="search"} 1.0' in metrics.text
    outputs = [
        caplog.text,
        str(rows),
        stored_keys(store_url),
        metrics.text,
        (await gw.client.get("/v1/switchyard/admin/keys", headers=ADMIN)).text,
        (await gw.client.get(f"/v1/switchyard/decisions/{decision}", headers=ADMIN)).text,
        (await gw.client.get("/v1/switchyard/dashboard", headers=ADMIN)).text,
    ]
    secret_part = key[16:]
    for text in outputs:
        assert secret_part not in text
    assert made["id"] in caplog.text  # the access log names the key by its id

"""Requests the gateway refuses itself leave a trace, against a real gateway and engine: one
access-log line (status, code, route, key id, reason), a stored record, a count in
/metrics and a row on the dashboard; a flood of them stays within the bounds, its held-back
lines summed up; no key in any of it. Flow control's refusals stay one record each."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.tenancy.auth import static_key_id
from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually, make_config
from tests.gateway.telemetry.test_metrics_endpoint import drained, sampled, total
from tests.gateway.telemetry.test_store_wiring import rows

KEY = "sk-refused-test-7f3c9a1b2d4e"
WRONG_KEY = "sk-wrong-secret-5e6f7a8b9c0d"
KEYS_ENV = "SWITCHYARD_TEST_REFUSED_KEYS"
CHAT = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
SUPPRESSED = re.compile(r"^\(refused\) (\d+) (\w+): ([\d,]+) similar lines? suppressed over \d+s$")


@dataclass(frozen=True)
class Case:
    status: int
    code: str
    route: str | None
    keyed: bool
    """The line and the record name the key's id."""
    body: bytes
    key: str = KEY
    before: int = 0
    """Requests that pass first (a rate limit's)."""


CASES = {
    "400-malformed-json": Case(400, "invalid_request", None, True, b'{"model": "default", '),
    "401-bad-key": Case(401, "invalid_api_key", None, False, b"{}", key=WRONG_KEY),
    "413-too-large": Case(413, "request_too_large", None, True, b" " * 2_000),
    "429-rate-limited": Case(
        429, "rate_limit_exceeded", "default", True, b'{"model": "default", '
        b'"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}', before=1,
    ),
}  # fmt: skip


async def refusing_gateway(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    url: str,
    *,
    keys: bool = True,
    refused: dict[str, Any] | None = None,
) -> RunningGateway:
    engine = await start_emulator(models=["emulated-model"])
    server: dict[str, Any] = {"max_body_bytes": 1_024}
    if keys:
        server["api_keys_env"] = KEYS_ENV
    config = make_config(
        {"a": engine.base_url},
        server=server,
        limits={"routes": {"default": {"rpm": 1}}},
        store={"url": url, "flush_interval_s": 0.05},
        telemetry={"refused": refused or {}},
    )
    return await start_gateway(config)


def access_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "switchyard.access"]


async def stored(gw: RunningGateway, url: str) -> list[dict[str, Any]]:
    store = gw.gateway.telemetry.store
    assert store is not None
    await store.flush_now()
    return sorted(await rows(url, "requests"), key=lambda r: r["id"])


def leaks(texts: list[str]) -> list[str]:
    """Texts holding either key, or a part of one as long as a virtual key's prefix."""
    parts = {key[i : i + 12] for key in (KEY, WRONG_KEY) for i in range(len(key) - 11)}
    return [t for t in texts if any(part in t for part in parts)]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_a_refused_request_is_logged_counted_and_stored_once(
    case: Case,
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    url = f"sqlite+aiosqlite:///{tmp_path / 'refused.db'}"
    gw = await refusing_gateway(start_emulator, start_gateway, url)
    auth = {"authorization": f"Bearer {case.key}", "content-type": "application/json"}
    with caplog.at_level(logging.INFO, logger="switchyard.access"):
        for _ in range(case.before):
            passed = await gw.client.post("/v1/chat/completions", json=CHAT, headers=auth)
            assert passed.status_code == 200
        answer = await gw.client.post("/v1/chat/completions", content=case.body, headers=auth)
        assert answer.status_code == case.status
        error = answer.json()["error"]
        assert error["code"] == case.code
        await drained(gw, case.before + 1)
    key_id = static_key_id(KEY) if case.keyed else None
    (line,) = [line for line in access_lines(caplog) if " -> (refused) " in line]
    key_part = f"  key {key_id}" if key_id else ""
    assert re.fullmatch(
        rf"{re.escape(case.route or '(no route)')} -> \(refused\) {case.status} \d+ms "
        rf"error {case.code}{key_part}  reason: {re.escape(error['message'])}",
        line,
    ), line
    (record,) = [r for r in await stored(gw, url) if r["decision_id"] == ""]
    assert (record["status"], record["error"], record["key_id"]) == (case.status, case.code, key_id)
    assert record["route"] == (case.route or "")
    assert record["reasons"] == {"refused": error["message"]}
    assert record["backend"] is None and record["attempts"] == 0
    values = await sampled(gw, "switchyard_rejected_requests_total", 1)
    assert total(values, "switchyard_rejected_requests_total", status=str(case.status)) == 1
    dashboard = await gw.client.get(
        "/v1/switchyard/dashboard", headers={"authorization": f"Bearer {KEY}"}
    )
    (shown,) = dashboard.json()["refused"]
    assert (shown["status"], shown["code"], shown["route"], shown["key_id"]) == (
        case.status, case.code, case.route, key_id,
    )  # fmt: skip
    assert shown["reason"] == error["message"] and shown["at"] > 0
    logged = [r.getMessage() for r in caplog.records]
    assert leaks([*logged, str(await stored(gw, url)), dashboard.text]) == []


async def test_a_flood_of_bad_requests_is_logged_and_stored_within_its_bounds(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'flood.db'}"
    bounds = {"log_lines_per_minute": 5, "records_per_minute": 3, "summary_every_s": 1.0}
    gw = await refusing_gateway(start_emulator, start_gateway, url, keys=False, refused=bounds)
    flood = 1_000
    with caplog.at_level(logging.INFO, logger="switchyard.access"):
        started = time.monotonic()
        for _ in range(flood // 50):
            answers = await asyncio.gather(*(bad_json(gw.client) for _ in range(50)))
            assert {a.status_code for a in answers} == {400}
        elapsed_s = time.monotonic() - started

        async def accounted() -> bool:
            lines = access_lines(caplog)
            held_back = sum(int(m[3].replace(",", "")) for m in map(SUPPRESSED.match, lines) if m)
            return sum(" -> (refused) " in line for line in lines) + held_back == flood

        await eventually(accounted, "every refusal logged or summed up", within_s=10.0)
    lines = access_lines(caplog)
    refused = [line for line in lines if line.startswith("(no route) -> (refused) 400 ")]
    summaries = [line for line in lines if SUPPRESSED.match(line)]
    assert len(lines) == len(refused) + len(summaries)
    # A bucket of N a minute: N at once, then N/60 a second while the flood lasted.
    assert 5 <= len(refused) <= 5 + elapsed_s * 5 / 60
    assert 1 <= len(summaries) <= 2 + elapsed_s / 1.0
    records = [r for r in await stored(gw, url) if r["decision_id"] == ""]
    assert 3 <= len(records) <= 3 + elapsed_s * 3 / 60
    assert {(r["status"], r["error"]) for r in records} == {(400, "invalid_request")}
    values = await sampled(gw, "switchyard_rejected_requests_total", flood)
    assert total(values, "switchyard_rejected_requests_total", code="invalid_request") == flood
    shown = (await gw.client.get("/v1/switchyard/dashboard")).json()["refused"]
    assert 1 <= len(shown) <= 5  # the last few of each code


async def bad_json(client: httpx.AsyncClient) -> httpx.Response:
    return await client.post("/v1/chat/completions", content=b"{nope")


async def test_flow_controls_refusal_stays_one_record_with_the_refused_shape(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'shed.db'}"
    engine = await start_emulator(models=["emulated-model"])
    config = make_config({"e": engine.base_url}, store={"url": url, "flush_interval_s": 0.05})
    config["backends"][0]["cache"] = {"prefill_tokens_per_s": 100}  # seconds for this prompt
    gw = await start_gateway(config)
    long = {**CHAT, "messages": [{"role": "user", "content": "hello there " * 50}]}
    with caplog.at_level(logging.INFO, logger="switchyard.access"):
        answer = await gw.client.post(
            "/v1/chat/completions", json=long, headers={"x-switchyard-ttft-ms": "500"}
        )
        assert answer.status_code == 429
        await drained(gw, 1)
    error = answer.json()["error"]
    assert error["code"] == "deadline_unmeetable"
    decision = answer.headers["x-switchyard-decision"]
    (line,) = access_lines(caplog)
    assert line.startswith("default -> (refused) 429 ")
    assert line.endswith(
        f"error deadline_unmeetable  reason: {error['message']}  decision {decision}"
    )
    (record,) = await stored(gw, url)  # its own record, not a second one as a refusal
    assert (record["decision_id"], record["status"], record["error"]) == (
        decision, 429, "deadline_unmeetable",
    )  # fmt: skip
    assert record["admission"] == "deadline_unmeetable"
    assert record["reasons"]["refused"] == error["message"]
    assert gw.gateway.telemetry.refusals.counts == {}  # counted as a record's error instead
    (shown,) = (await gw.client.get("/v1/switchyard/dashboard")).json()["refused"]
    assert (shown["code"], shown["decision"]) == ("deadline_unmeetable", decision)

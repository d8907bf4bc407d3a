"""Secrets never leak: traffic with known provider and client keys, failures whose upstream
bodies echo the request's headers (the provider key among them), then every output the
gateway has searched for the keys: the access log (line and JSON), every other log line,
the SQLite store's file, the decisions API, the admin APIs, /metrics, the dashboard's
data, and every response's body and headers.

Client keys are the static `server.api_keys_env` keys; virtual keys (issue 16, item 1)
join `CLIENT_KEYS` once they land.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually

PROVIDER_KEYS = {
    "good": "sk-prov-good-7c1f0e2a9b",
    "refuses": "sk-prov-refused-51d3aa6e",
    "fails": "sk-prov-fails-0b9e44c7",
    "rejects": "sk-prov-rejects-d2f81c35",
}
"""Each backend's key, read from its `api_key_env`."""
CLIENT_KEYS = ("sk-client-one-93be10f4", "sk-client-two-6a07d2e1")
WRONG_CLIENT_KEY = "sk-client-wrong-e4c2b9d0"
SECRETS = (*PROVIDER_KEYS.values(), *CLIENT_KEYS, WRONG_CLIENT_KEY)

ECHO: dict[str, Any] = {"echo_request_headers": True}
ENGINES: dict[str, dict[str, Any]] = {
    # name: the emulator's settings (its own key, the faults it answers with)
    "good": {"api_key": PROVIDER_KEYS["good"]},
    "refuses": {"api_key": "sk-the-engine-wants-another", "faults": ECHO},  # 401
    "fails": {"faults": {**ECHO, "fail_status": 500}},
    "rejects": {"faults": {**ECHO, "fail_status": 400}},  # a 4xx body is relayed
}


def _config(urls: dict[str, str], tmp_path: Path, access_log: str) -> dict[str, Any]:
    return {
        "server": {"api_keys_env": "SY_TEST_CLIENT_KEYS"},
        "backends": [
            {"name": n, "base_url": u, "models": ["m"], "api_key_env": f"SY_TEST_KEY_{n.upper()}"}
            for n, u in urls.items()
        ],
        "routes": [{"name": n, "model": "m", "backends": [n]} for n in urls],
        "profiles": [
            {
                "name": "balanced",
                "plugins": [{"ref": "round-robin-scorer"}, {"ref": "max-score-picker"}],
            }
        ],
        "health": {"active_probes": False},
        "retry": {"max_attempts": 1},
        "telemetry": {"access_log": access_log},
        "store": {"url": f"sqlite+aiosqlite:///{tmp_path}/store.db", "store_prompts": True},
        "quality": {"enabled": True},
    }


class Outputs:
    """Everything the gateway said, to be searched."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str]] = []

    def add(self, where: str, text: str) -> None:
        self.texts.append((where, text))

    def response(self, where: str, response: httpx.Response) -> None:
        self.add(f"{where} body", response.text)
        self.add(f"{where} headers", repr(list(response.headers.items())))

    def leaks(self) -> list[tuple[str, str]]:
        return [(where, s) for where, text in self.texts for s in SECRETS if s in text]


async def _traffic(gw: RunningGateway, outputs: Outputs) -> list[str]:
    """Requests on every route and ingress, good and bad keys; the decision ids."""
    good = {"authorization": f"Bearer {CLIENT_KEYS[0]}"}
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    decisions = []
    for route in ENGINES:
        for stream in (False, True):
            for path, body in (
                ("/v1/chat/completions", {**chat, "model": route, "stream": stream}),
                ("/v1/messages", {**chat, "model": route, "stream": stream}),
                ("/v1/responses", {"model": route, "input": "hi", "stream": stream}),
            ):
                response = await gw.client.post(path, json=body, headers=good)
                outputs.response(f"{path} {route} stream={stream}", response)
                if "x-switchyard-decision" in response.headers:
                    decisions.append(response.headers["x-switchyard-decision"])
    for headers in (
        {"authorization": f"Bearer {WRONG_CLIENT_KEY}"},
        {"x-api-key": WRONG_CLIENT_KEY},
        {"authorization": WRONG_CLIENT_KEY},
    ):
        for path in ("/v1/chat/completions", "/v1/messages"):
            response = await gw.client.post(path, json={**chat, "model": "good"}, headers=headers)
            assert response.status_code == 401
            outputs.response(f"{path} wrong key", response)
    second = {"x-api-key": CLIENT_KEYS[1]}
    response = await gw.client.post("/v1/messages", json={**chat, "model": "good"}, headers=second)
    assert response.status_code == 200, response.text
    return decisions


async def _read_apis(gw: RunningGateway, decisions: list[str], outputs: Outputs) -> None:
    auth = {"authorization": f"Bearer {CLIENT_KEYS[0]}"}
    for decision in decisions:
        response = await gw.client.get(f"/v1/switchyard/decisions/{decision}", headers=auth)
        assert response.status_code == 200
        outputs.response(f"decision {decision}", response)
    for path in (
        "/metrics",
        "/readyz",
        "/v1/models",
        "/v1/switchyard/backends",
        "/v1/switchyard/state",
        "/v1/switchyard/quality?history=true",
        "/v1/switchyard/dashboard",
    ):
        response = await gw.client.get(path, headers=auth)
        assert response.status_code == 200, (path, response.text)
        outputs.response(path, response)


@pytest.mark.parametrize("access_log", ["line", "json"])
async def test_no_secret_appears_in_any_output(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    access_log: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("SY_TEST_CLIENT_KEYS", ",".join(CLIENT_KEYS))
    for name, key in PROVIDER_KEYS.items():
        monkeypatch.setenv(f"SY_TEST_KEY_{name.upper()}", key)
    urls = {n: (await start_emulator(models=["m"], **s)).base_url for n, s in ENGINES.items()}
    gw = await start_gateway(_config(urls, tmp_path, access_log))
    outputs = Outputs()
    decisions = await _traffic(gw, outputs)
    await _read_apis(gw, decisions, outputs)
    expected = len(ENGINES) * 6 + 1  # refused keys leave no record, only a count
    await _flushed(gw, expected)
    await gw.close()
    for name, data in _files(tmp_path):
        outputs.add(f"file {name}", data.decode("latin-1"))
    access = [r.getMessage() for r in caplog.records if r.name == "switchyard.access"]
    assert len(access) >= expected, "the access log saw the traffic"
    for record in caplog.records:
        outputs.add(f"log {record.name}", record.getMessage() + (record.exc_text or ""))
    assert outputs.leaks() == []
    assert _echoed_somewhere(outputs), "the faults did echo the provider keys upstream"


def _files(folder: Path) -> list[tuple[str, bytes]]:
    """Every file the gateway wrote under `folder`: the SQLite database and its journal."""
    return [(path.name, path.read_bytes()) for path in folder.rglob("*") if path.is_file()]


def _echoed_somewhere(outputs: Outputs) -> bool:
    """The redacted echo reached the client: proof the test met the echoing failures."""
    return any("[redacted]" in text for _, text in outputs.texts)


async def _flushed(gw: RunningGateway, expected: int) -> None:
    """The telemetry thread has written the records to the SQLite file."""
    import sqlite3

    database = gw.gateway.config.store.url
    assert database is not None
    path = database.removeprefix("sqlite+aiosqlite:///")

    async def written() -> bool:
        try:
            with sqlite3.connect(path) as connection:
                (count,) = connection.execute("select count(*) from requests").fetchone()
        except sqlite3.Error:
            return False
        return int(count) >= expected

    await eventually(written, "request records written to the store", within_s=15)

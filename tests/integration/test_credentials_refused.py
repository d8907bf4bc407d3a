"""A backend that refuses the gateway's key (an engine on loopback answering 401): the
client's error and the log name the environment variable the key came from, or that it is
unset, and never the key itself, in any body, header or log line."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.conftest import StartEmulator, StartGateway, make_config
from tests.gateway.telemetry.test_metrics_endpoint import drained

ENGINE_KEY = "sk-engine-wants-this-3a9f01"
WRONG_KEY = "sk-gateway-holds-this-c47e22"
KEY_ENV = "SY_REFUSED_UPSTREAM_KEY"
CHAT: dict[str, Any] = {
    "model": "default",
    "messages": [{"role": "user", "content": "hello"}],
    "max_tokens": 4,
}


@pytest.mark.parametrize(
    ("held", "rejected"),
    [
        (WRONG_KEY, f"upstream rejected the credentials from {KEY_ENV}"),
        (
            None,
            f"upstream rejected a request sent without credentials: {KEY_ENV} is unset or empty",
        ),
    ],
    ids=["wrong-key", "unset"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_a_refused_key_names_its_variable_and_never_the_key(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    held: str | None,
    rejected: str,
    stream: bool,
) -> None:
    if held is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, held)
    engine = await start_emulator(models=["emulated-model"], api_key=ENGINE_KEY)
    config = make_config({"cloud": engine.base_url}, retry={"max_attempts": 1})
    config["backends"][0]["api_key_env"] = KEY_ENV
    caplog.set_level(logging.INFO)
    gw = await start_gateway(config)

    response = await gw.client.post("/v1/chat/completions", json={**CHAT, "stream": stream})
    await drained(gw, 1)  # the access log's line is written too

    expected = f"backend cloud: {rejected} (HTTP 401)"
    assert response.status_code == 502
    assert response.json()["error"] == {
        "message": expected,
        "type": "upstream_error",
        "param": None,
        "code": "upstream_credentials_refused",
    }
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert expected in warnings
    said = [response.text, repr(list(response.headers.items())), caplog.text]
    said += [r.getMessage() for r in caplog.records]
    for key in (WRONG_KEY, ENGINE_KEY):
        assert not [text for text in said if key in text]
    listed = await gw.client.get("/v1/switchyard/backends")
    [row] = listed.json()["backends"]
    assert row["credentials"]["state"] == ("missing" if held is None else "set")
    assert WRONG_KEY not in listed.text

"""A backend's key as the gateway tells it before any request, and where it shows: the
backends endpoint and the dashboard's data name the variable, never what it holds."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.credentials import backend_credentials
from tests.conftest import StartEmulator, StartGateway, make_config, parsed

KEY = "sk-cred-set-4f2a9c1e"


@pytest.mark.parametrize(
    ("backend", "env", "state", "problem"),
    [
        ({"kind": "vllm"}, None, "none", None),
        ({"kind": "vllm", "api_key_env": "SY_CRED_KEY"}, KEY, "set", None),
        (
            {"kind": "vllm", "api_key_env": "SY_CRED_KEY"},
            None,
            "missing",
            "SY_CRED_KEY is unset or empty",
        ),
        (
            {"kind": "openai", "api_key_env": "SY_CRED_KEY"},
            " ",
            "missing",
            "SY_CRED_KEY is unset or empty",
        ),
        ({"kind": "openai"}, None, "unnamed", "kind openai takes a key and api_key_env names none"),
        (
            {"kind": "openai-compatible", "preset": "groq"},
            None,
            "unnamed",
            "kind openai-compatible takes a key and api_key_env names none",
        ),
        (
            {"kind": "anthropic"},
            None,
            "unnamed",
            "kind anthropic takes a key and api_key_env names none",
        ),
        ({"kind": "ollama"}, None, "none", None),
        # An emulator stands in for the provider: no key is needed, whatever is named.
        (
            {"kind": "gemini", "api_key_env": "SY_CRED_KEY", "base_url": None, "emulator": {}},
            None,
            "none",
            None,
        ),
    ],
    ids=[
        "engine",
        "set",
        "unset",
        "blank",
        "cloud-unnamed",
        "bearer-preset",
        "anthropic",
        "ollama",
        "emulated",
    ],
)
def test_credentials_of_a_backend(
    monkeypatch: pytest.MonkeyPatch,
    backend: dict[str, Any],
    env: str | None,
    state: str,
    problem: str | None,
) -> None:
    if env is None:
        monkeypatch.delenv("SY_CRED_KEY", raising=False)
    else:
        monkeypatch.setenv("SY_CRED_KEY", env)
    config = make_config({"b": "https://api.example.com/v1"})
    config["backends"][0].update(backend)
    if config["backends"][0]["base_url"] is None:
        del config["backends"][0]["base_url"]
    found = backend_credentials(parsed(config).backends[0])
    assert (found.api_key_env, found.state, found.problem) == (
        backend.get("api_key_env"),
        state,
        problem,
    )
    assert KEY not in repr(found)


async def test_the_backends_endpoint_and_the_dashboard_show_a_missing_key(
    start_emulator: StartEmulator, start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SY_CRED_SET", KEY)
    monkeypatch.delenv("SY_CRED_UNSET", raising=False)
    engine = await start_emulator(models=["emulated-model"])
    config = make_config(
        {"with-key": engine.base_url, "no-key": engine.base_url, "plain": engine.base_url}
    )
    config["backends"][0]["api_key_env"] = "SY_CRED_SET"
    config["backends"][1]["api_key_env"] = "SY_CRED_UNSET"
    gw = await start_gateway(config)

    listed = await gw.client.get("/v1/switchyard/backends")
    shown = {b["name"]: b["credentials"] for b in listed.json()["backends"]}
    assert shown == {
        "with-key": {"api_key_env": "SY_CRED_SET", "state": "set", "problem": None},
        "no-key": {
            "api_key_env": "SY_CRED_UNSET",
            "state": "missing",
            "problem": "SY_CRED_UNSET is unset or empty",
        },
        "plain": {"api_key_env": None, "state": "none", "problem": None},
    }
    dashboard = await gw.client.get("/v1/switchyard/dashboard")
    assert {b["name"]: b["credentials"] for b in dashboard.json()["backends"]} == shown
    for response in (listed, dashboard):
        assert KEY not in response.text
    # It still serves: the backend without its key is only a warning.
    chat = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    assert (await gw.client.post("/v1/chat/completions", json=chat)).status_code == 200

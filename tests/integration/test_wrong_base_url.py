"""A `kind: anthropic` backend pointed at `switchyard emulate`'s origin, without the `/v1`
its base_url needs: every request meets the emulator's bare 404 for `/messages`. The client
still gets a 404, now saying which backend answered it for which path and what its
provider's base URL looks like, through both ingresses, and never the key or its body."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import StartEmulator, StartGateway, make_config
from tests.gateway.telemetry.test_metrics_endpoint import drained

KEY = "sk-ant-wrong-base-url-7d21c9"
KEY_ENV = "SY_WRONG_BASE_URL_KEY"
SECRET_WORDS = "the-prompt-no-error-quotes"
EXPECTED = (
    "backend 'claude' answered HTTP 404 for POST /messages: is its base_url right? "
    "Its provider's is https://api.anthropic.com/v1"
)
BODY: dict[str, Any] = {
    "model": "default",
    "max_tokens": 4,
    "messages": [{"role": "user", "content": SECRET_WORDS}],
}


def anthropic_backend(base_url: str) -> dict[str, Any]:
    config = make_config({"claude": base_url}, retry={"max_attempts": 1})
    config["backends"][0] |= {"kind": "anthropic", "api_key_env": KEY_ENV}
    return config


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_a_base_url_without_v1_is_named_in_the_clients_404(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
    stream: bool,
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    engine = await start_emulator(models=["emulated-model"], api_key=KEY)
    gw = await start_gateway(anthropic_backend(engine.origin))

    response = await gw.client.post(path, json={**BODY, "stream": stream})
    await drained(gw, 1)

    assert response.status_code == 404
    error = response.json()["error"]  # OpenAI's shape and Anthropic's alike
    assert error["message"] == EXPECTED
    assert error["type"] == "not_found_error"
    assert KEY not in response.text and SECRET_WORDS not in response.text


async def test_the_same_backend_with_v1_answers(
    start_emulator: StartEmulator, start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    engine = await start_emulator(models=["emulated-model"], api_key=KEY)
    gw = await start_gateway(anthropic_backend(engine.origin + "/v1"))

    response = await gw.client.post("/v1/chat/completions", json=BODY)

    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize(
    ("root", "served", "message", "code"),
    [
        (
            "",
            "emulated-model",
            "backend 'gpt' answered HTTP 404 for POST /chat/completions: is its base_url "
            "right? Its provider's is https://api.openai.com/v1",
            "upstream_404",
        ),
        # The engine explains its 404 (OpenAI's unknown model): its words and code kept.
        (
            "/v1",
            "another-model",
            "backend 'gpt' answered HTTP 404 for POST /v1/chat/completions: The model "
            "`emulated-model` does not exist or you do not have access to it.",
            "model_not_found",
        ),
    ],
    ids=["no-v1", "unknown-model"],
)
async def test_an_openai_backends_404_says_what_it_was_asked(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    root: str,
    served: str,
    message: str,
    code: str,
) -> None:
    engine = await start_emulator(models=[served])
    config = make_config({"gpt": engine.origin + root}, retry={"max_attempts": 1})
    config["backends"][0]["kind"] = "openai"
    gw = await start_gateway(config)

    response = await gw.client.post("/v1/chat/completions", json=BODY)

    assert response.status_code == 404
    error = response.json()["error"]
    assert (error["message"], error["code"]) == (message, code)

"""Bad input gets a clear OpenAI-shaped error with the right status, and nothing else breaks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.config.root import parse_config
from gateway.errors import ConfigError
from gateway.process.service import start_gateway as start_service
from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config
from tests.gateway.http.conftest import assert_openai_error

CHAT: dict[str, Any] = {"model": "default", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def gw(small_body_gw: RunningGateway) -> RunningGateway:
    """Small bodies only, to see the limit's error."""
    return small_body_gw


@pytest.mark.parametrize(
    ("path", "content", "status", "code", "param"),
    [
        ("/v1/chat/completions", b"{not json", 400, "invalid_request", None),
        ("/v1/chat/completions", b"[1, 2]", 400, "invalid_request", None),
        ("/v1/chat/completions", b'{"messages": []}', 400, "invalid_request", "model"),
        ("/v1/chat/completions", b'{"model": "default"}', 400, "invalid_request", "messages"),
        ("/v1/chat/completions", b'{"model": "default", "messages": []}', 400, None, "messages"),
        (
            "/v1/chat/completions",
            b'{"model": "default", "messages": [{"content": "x"}]}',
            400,
            None,
            "messages.0.role",
        ),
        (
            "/v1/chat/completions",
            b'{"model": "default", "messages": [{"role": "user"}], "n": 0}',
            400,
            None,
            "n",
        ),
        (
            "/v1/chat/completions",
            b'{"model": "default", "messages": [{"role": "user", "content": ""}], "stream": "yes"}',
            400,
            None,
            "stream",
        ),
        ("/v1/completions", b'{"model": "default"}', 400, None, "prompt"),
        ("/v1/embeddings", b'{"model": "default", "input": 5}', 400, None, None),
        (
            "/v1/chat/completions",
            b'{"model": "nope", "messages": [{"role": "user"}]}',
            404,
            "model_not_found",
            "model",
        ),
    ],
)
async def test_bad_requests(
    gw: RunningGateway, path: str, content: bytes, status: int, code: str | None, param: str | None
) -> None:
    response = await gw.client.post(path, content=content)
    error = assert_openai_error(response, status, code)
    if param is not None:
        assert error["param"] == param


async def test_body_limit_by_content_length_and_by_stream(gw: RunningGateway) -> None:
    big = b'{"model": "default", "messages": [{"role": "user", "content": "' + b"x" * 5000 + b'"}]}'
    assert_openai_error(
        await gw.client.post("/v1/chat/completions", content=big), 413, "request_too_large"
    )

    async def chunked() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 1000):
            yield big[start : start + 1000]

    response = await gw.client.post("/v1/chat/completions", content=chunked())
    assert_openai_error(response, 413, "request_too_large")
    ok = await gw.client.post("/v1/chat/completions", json=CHAT)
    assert ok.status_code == 200, "the gateway keeps serving"


async def test_unknown_path_and_wrong_method(gw: RunningGateway) -> None:
    assert_openai_error(await gw.client.get("/v1/nothing-here"), 404, "not_found")
    assert_openai_error(await gw.client.get("/v1/chat/completions"), 405, None)


async def test_client_keys_are_enforced(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SY_KEYS", "key-one, key-two")
    engine = await start_emulator()
    config = make_config({"only": engine.base_url})
    config["server"] = {"api_keys_env": "SY_KEYS"}
    gw = await start_gateway(config)
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "key-one"}):
        response = await gw.client.post("/v1/chat/completions", json=CHAT, headers=headers)
        error = assert_openai_error(response, 401, "invalid_api_key")
        assert "wrong" not in error["message"]
    assert (await gw.client.get("/v1/models")).status_code == 401
    ok = await gw.client.post(
        "/v1/chat/completions", json=CHAT, headers={"authorization": "Bearer key-two"}
    )
    assert ok.status_code == 200
    assert (await gw.client.get("/healthz")).status_code == 200, "probes need no key"


async def test_unset_client_keys_env_refuses_to_start(
    start_emulator: StartEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SY_MISSING_KEYS", raising=False)
    engine = await start_emulator()
    config = make_config({"only": engine.base_url})
    config["server"] = {"api_keys_env": "SY_MISSING_KEYS"}
    with pytest.raises(ConfigError, match="SY_MISSING_KEYS"):
        await start_service(parse_config(config))


async def test_every_backend_at_capacity_is_429(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    profile = [{"ref": "capacity-filter"}, {"ref": "max-score-picker"}]
    config = make_config({"only": engine.base_url}, profile=profile)
    config["backends"][0]["max_concurrency"] = 1
    gw = await start_gateway(config)
    gw.gateway.state.acquire("only")
    try:
        response = await gw.client.post("/v1/chat/completions", json=CHAT)
    finally:
        gw.gateway.state.release("only")
    error = assert_openai_error(response, 429, "capacity_exhausted")
    assert "max_concurrency" in error["message"]
    assert response.headers["retry-after"] == "1"


async def test_no_backend_left_is_503(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    config = make_config(
        {"only": engine.base_url}, profile=[{"ref": "strict"}, {"ref": "max-score-picker"}]
    )
    config["policies"] = [
        {"type": "healthy-filter", "name": "strict", "params": {"panic_mode": False}}
    ]
    gw = await start_gateway(config)
    # A failed probe, not a cool-down: a route cooling down is a 429 with Retry-After
    # (tests/faults/test_cooling_route.py).
    gw.gateway.state.record_probe("only", False, "maintenance")
    response = await gw.client.post("/v1/chat/completions", json=CHAT)
    error = assert_openai_error(response, 503, "no_backend_available")
    assert "strict" in error["message"]

"""The ``anthropic-beta`` and ``anthropic-version`` headers: known betas pass and are
counted in the stats with the version, unknown ones are refused as Anthropic refuses them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from emulator.server import EmulatorServer
from tests.emulator.conftest import ANTHROPIC_HEADERS, MODEL, stats
from tests.emulator.wire.test_anthropic_format import message_request

anthropic = pytest.importorskip(
    "anthropic", reason="the anthropic SDK is not installed (pip install -e '.[dev]')"
)

INTERLEAVED = "interleaved-thinking-2025-05-14"
CONTEXT_1M = "context-1m-2025-08-07"


async def _post(http: httpx.AsyncClient, **headers: str) -> httpx.Response:
    merged = {**ANTHROPIC_HEADERS, **headers}
    return await http.post("/v1/messages", json=message_request(), headers=merged)


async def test_known_betas_are_counted_per_request(root_client: httpx.AsyncClient) -> None:
    assert (await stats(root_client))["anthropic_betas"] == {}
    both = f"{INTERLEAVED}, {CONTEXT_1M}"
    for headers in ({"anthropic-beta": both}, {"anthropic-beta": INTERLEAVED}, {}):
        response = await _post(root_client, **headers)
        assert response.status_code == 200, response.text
    numbers: Any = await stats(root_client)
    assert numbers["anthropic_betas"] == {INTERLEAVED: 2, CONTEXT_1M: 1}
    assert numbers["anthropic_version"] == "2023-06-01"


async def test_unknown_betas_are_refused_and_not_counted(root_client: httpx.AsyncClient) -> None:
    response = await _post(root_client, **{"anthropic-beta": f"{INTERLEAVED},made-up-2099-01-01"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith(
        "Unexpected value(s) `made-up-2099-01-01` for the `anthropic-beta` header."
    )
    assert (await stats(root_client))["anthropic_betas"] == {}


async def test_the_last_version_seen_is_recorded(root_client: httpx.AsyncClient) -> None:
    await _post(root_client, **{"anthropic-version": "2099-12-31"})
    assert (await stats(root_client))["anthropic_version"] == "2099-12-31"


async def test_sdk_betas_reach_the_engine(emulator: EmulatorServer) -> None:
    async with anthropic.AsyncAnthropic(base_url=emulator.origin, api_key="x") as sdk:
        hi: Any = [{"role": "user", "content": "hi"}]
        message = await sdk.beta.messages.create(
            model=MODEL, max_tokens=4, messages=hi, betas=[INTERLEAVED, CONTEXT_1M]
        )
        assert message.usage.output_tokens == 4
        with pytest.raises(anthropic.BadRequestError, match="Unexpected value"):
            await sdk.beta.messages.create(
                model=MODEL, max_tokens=4, messages=hi, betas=["no-such-beta"]
            )
        version = sdk.default_headers["anthropic-version"]
    runtime_stats = emulator.runtime.stats
    assert runtime_stats.anthropic_betas == {INTERLEAVED: 1, CONTEXT_1M: 1}
    assert runtime_stats.anthropic_version == version

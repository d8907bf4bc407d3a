"""A backend whose usage counts are not numbers: the answer still reaches the client, the
backend's slot is freed and nothing counts against it (a bad count reads as 0)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest

from tests.conftest import StartGateway, make_config
from tests.providers.fake_upstream import Reply, ScriptedServer, running

ODD_USAGE = {"prompt_tokens": "n/a", "completion_tokens": [1], "total_tokens": None}
REPLY = {"id": "c1", "object": "chat.completion", "created": 1, "model": "emulated-model"}


def _answer(stream: bool) -> Reply:
    if not stream:
        message = {"role": "assistant", "content": "hello"}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return Reply(body=orjson.dumps(REPLY | {"choices": [choice], "usage": ODD_USAGE}))
    chunk = REPLY | {"object": "chat.completion.chunk"}
    events = [
        chunk | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "hel"}}]},
        chunk | {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]},
        chunk | {"choices": [], "usage": ODD_USAGE},
    ]
    pieces = [b"data: %b\n\n" % orjson.dumps(e) for e in events]
    return Reply(body=[*pieces, b"data: [DONE]\n\n"])


@pytest.fixture
async def odd_backend() -> AsyncIterator[ScriptedServer]:
    async with running(ScriptedServer()) as server:
        yield server


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_odd_usage_counts_neither_fail_the_request_nor_keep_the_backend(
    odd_backend: ScriptedServer, start_gateway: StartGateway, stream: bool
) -> None:
    config = make_config({"a": odd_backend.url + "/v1"}, health={"active_probes": False})
    gw = await start_gateway(config)
    ask = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    for _ in range(3):
        odd_backend.reply(_answer(stream))
        response = await gw.client.post("/v1/chat/completions", json=ask)
        assert response.status_code == 200
        assert b"hel" in response.content
    (backend,) = gw.gateway.state.describe()
    assert backend["in_flight"] == 0, "every answer freed the backend's slot"
    assert backend["failures"] == 0 and backend["healthy"] is True

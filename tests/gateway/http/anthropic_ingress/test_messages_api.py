"""`POST /v1/messages` through the real app and emulated engines: whole answers, streams,
tool use, and what the backend receives."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config
from tests.gateway.http.anthropic_ingress.sse import anthropic_events, streamed_text

HEADERS = {"anthropic-version": "2023-06-01", "x-api-key": "unused"}
MESSAGES: dict[str, Any] = {
    "model": "default",
    "max_tokens": 12,
    "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": "hello there"}],
}
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather in a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


async def test_whole_message(gw: RunningGateway) -> None:
    response = await gw.client.post("/v1/messages", json=MESSAGES, headers=HEADERS)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    message = response.json()
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["id"].startswith("msg_")
    [block] = message["content"]
    assert block["type"] == "text" and block["text"]
    assert message["stop_reason"] == "max_tokens" and message["stop_sequence"] is None
    usage = message["usage"]
    assert usage["output_tokens"] == 12
    assert usage["input_tokens"] > 0 and usage["cache_read_input_tokens"] >= 0
    assert response.headers["x-switchyard-backend"] == "only"
    decision = await gw.client.get(
        f"/v1/switchyard/decisions/{response.headers['x-switchyard-decision']}"
    )
    assert decision.json()["status"] == 200


async def test_stream_events_in_order_with_the_same_text(gw: RunningGateway) -> None:
    whole = (await gw.client.post("/v1/messages", json=MESSAGES, headers=HEADERS)).json()
    response = await gw.client.post(
        "/v1/messages", json={**MESSAGES, "stream": True}, headers=HEADERS
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    events = anthropic_events(response.content)
    kinds = [kind for kind, _ in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(kinds[2:-3]) == {"content_block_delta"}
    assert streamed_text(events) == whole["content"][0]["text"], "the engine is deterministic"
    message_delta = events[-2][1]
    assert message_delta["delta"] == {"stop_reason": "max_tokens", "stop_sequence": None}
    assert message_delta["usage"] == whole["usage"], "usage from the include_usage chunk"


async def test_tool_use_round_trip(gw: RunningGateway) -> None:
    ask = {**MESSAGES, "tools": [WEATHER_TOOL], "tool_choice": {"type": "any"}}
    message = (await gw.client.post("/v1/messages", json=ask, headers=HEADERS)).json()
    assert message["stop_reason"] == "tool_use"
    [call] = message["content"]
    assert call["type"] == "tool_use" and call["name"] == "get_weather"
    assert isinstance(call["input"]["city"], str)

    streamed = await gw.client.post("/v1/messages", json={**ask, "stream": True}, headers=HEADERS)
    events = anthropic_events(streamed.content)
    start = next(e for k, e in events if k == "content_block_start")
    assert start["content_block"]["type"] == "tool_use"
    assert start["content_block"]["name"] == "get_weather"
    partial = "".join(e["delta"]["partial_json"] for k, e in events if k == "content_block_delta")
    assert orjson.loads(partial) == call["input"]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"

    answer = {
        **MESSAGES,
        "tools": [WEATHER_TOOL],
        "tool_choice": {"type": "none"},
        "messages": [
            *MESSAGES["messages"],
            {"role": "assistant", "content": message["content"]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call["id"], "content": "sunny, 21 C"}
                ],
            },
        ],
    }
    final = await gw.client.post("/v1/messages", json=answer, headers=HEADERS)
    assert final.status_code == 200, final.text
    assert final.json()["content"][0]["type"] == "text"


class CaptureBackend:
    """Records what the gateway forwards; answers as an OpenAI engine with reasoning."""

    REPLY = {
        "id": "chatcmpl-c",
        "object": "chat.completion",
        "model": "captured",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "4", "reasoning_content": "2+2"},
                "finish_reason": "stop",
                "stop_reason": "STOP",
            }
        ],
        "usage": {
            "prompt_tokens": 50,
            "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": 32, "cache_write_tokens": 8},
        },
    }

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        self.bodies.append(orjson.loads(await request.body()))
        return Response(orjson.dumps(self.REPLY), media_type="application/json")


async def test_backend_gets_openai_and_client_gets_anthropic(
    capture: tuple[CaptureBackend, str], start_gateway: StartGateway
) -> None:
    backend, url = capture
    gw = await start_gateway(make_config({"cap": url}, model="upstream-name"))
    request = {
        **MESSAGES,
        "stop_sequences": ["STOP"],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "top_k": 3,
        "metadata": {"user_id": "someone"},
    }
    response = await gw.client.post("/v1/messages", json=request, headers=HEADERS)
    assert response.status_code == 200, response.text
    assert backend.bodies == [
        {
            "model": "upstream-name",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "hello there"},
            ],
            "max_tokens": 12,
            "stream": False,
            "stop": ["STOP"],
            "reasoning_effort": "low",
            "user": "someone",
        }
    ]
    message = response.json()
    assert message["content"] == [
        {"type": "thinking", "thinking": "2+2", "signature": ""},
        {"type": "text", "text": "4"},
    ]
    assert (message["stop_reason"], message["stop_sequence"]) == ("stop_sequence", "STOP")
    assert message["usage"] == {
        "input_tokens": 10,
        "output_tokens": 3,
        "cache_read_input_tokens": 32,
        "cache_creation_input_tokens": 8,
    }


async def test_metadata_user_id_keys_the_session(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    """Anthropic's `metadata.user_id` is the session key session affinity reads, as
    OpenAI's `user` is: one user's requests keep to one backend; `x-session-id` wins."""
    urls = {name: (await start_emulator()).base_url for name in ("a", "b", "c")}
    sticky = [
        {"ref": "healthy-filter"},
        {"ref": "session-affinity-scorer"},
        {"ref": "max-score-picker"},
    ]
    gw = await start_gateway(make_config(urls, profile=sticky))

    async def decided(user_id: str | None, headers: dict[str, str]) -> dict[str, Any]:
        body = {**MESSAGES, "metadata": {"user_id": user_id}}
        response = await gw.client.post("/v1/messages", json=body, headers=HEADERS | headers)
        assert response.status_code == 200, response.text
        decision_id = response.headers["x-switchyard-decision"]
        found: dict[str, Any] = (
            await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")
        ).json()
        return found

    first = await decided("user-0123456789", {})
    reasons = [c["scores"]["session-affinity-scorer"]["reason"] for c in first["candidates"]]
    assert all(reason.startswith("session user…") for reason in reasons), reasons
    again = [await decided("user-0123456789", {}) for _ in range(3)]
    assert {d["served_by"] for d in again} == {first["served_by"]}
    overridden = await decided("user-0123456789", {"x-session-id": "other-9876543210"})
    assert all(
        c["scores"]["session-affinity-scorer"]["reason"].startswith("session othe…")
        for c in overridden["candidates"]
    )
    anonymous = await decided(None, {})
    assert {c["scores"]["session-affinity-scorer"]["reason"] for c in anonymous["candidates"]} == {
        "no session key"
    }

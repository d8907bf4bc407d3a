"""`POST /v1/responses` through the real app and emulated engines: whole answers, streams,
function calls, and what the backend receives."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from emulator.loopback import LoopbackServer
from tests.conftest import RunningGateway, StartGateway, make_config
from tests.gateway.http.responses_ingress.sse import kinds, response_events, streamed_text

REQUEST: dict[str, Any] = {
    "model": "default",
    "instructions": "You are terse.",
    "input": "hello there",
    "max_output_tokens": 12,
    "metadata": {"ticket": "42"},
}
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    "strict": True,
}
TEXT_ITEM_EVENTS = [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
]


async def test_whole_response(gw: RunningGateway) -> None:
    response = await gw.client.post("/v1/responses", json=REQUEST)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    answer = response.json()
    assert answer["object"] == "response" and answer["id"].startswith("resp_")
    assert answer["model"] == "default", "the route's name"
    assert answer["status"] == "incomplete"
    assert answer["incomplete_details"] == {"reason": "max_output_tokens"}
    assert (answer["instructions"], answer["metadata"]) == ("You are terse.", {"ticket": "42"})
    [message] = answer["output"]
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["id"].startswith("msg_")
    [part] = message["content"]
    assert part["type"] == "output_text" and part["text"] and part["annotations"] == []
    usage = answer["usage"]
    assert usage["output_tokens"] == 12 and usage["input_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + 12
    assert usage["input_tokens_details"]["cached_tokens"] >= 0
    assert usage["output_tokens_details"] == {"reasoning_tokens": 0}
    assert response.headers["x-switchyard-backend"] == "only"
    decision = await gw.client.get(
        f"/v1/switchyard/decisions/{response.headers['x-switchyard-decision']}"
    )
    assert decision.json()["status"] == 200


async def test_stream_events_in_order_with_the_same_text(gw: RunningGateway) -> None:
    whole = (await gw.client.post("/v1/responses", json=REQUEST)).json()
    response = await gw.client.post("/v1/responses", json={**REQUEST, "stream": True})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    assert "x-switchyard-decision" in response.headers
    events = response_events(response.content)
    order = kinds(events)
    assert order[:5] == ["response.created", "response.in_progress", *TEXT_ITEM_EVENTS]
    assert set(order[5:-4]) == {"response.output_text.delta"}
    assert order[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.incomplete",
    ]
    text = whole["output"][0]["content"][0]["text"]
    assert streamed_text(events) == text, "the engine is deterministic"
    assert events[-4]["text"] == text
    final = events[-1]["response"]
    assert final["id"] == events[0]["response"]["id"] and final["status"] == "incomplete"
    assert final["output"][0]["content"][0]["text"] == text
    assert final["output"][0]["id"] == events[2]["item"]["id"]
    assert final["usage"] == whole["usage"], "usage from the include_usage chunk"


async def test_a_finished_answer_completes(gw: RunningGateway) -> None:
    # The emulator ends a JSON answer itself; a free text only at max_output_tokens.
    ask = {**REQUEST, "text": {"format": {"type": "json_object"}}, "stream": True}
    events = response_events((await gw.client.post("/v1/responses", json=ask)).content)
    assert events[-1]["type"] == "response.completed"
    final = events[-1]["response"]
    assert final["status"] == "completed" and final["incomplete_details"] is None
    assert final["output"][0]["status"] == "completed"
    assert isinstance(orjson.loads(streamed_text(events)), dict)


async def test_function_call_round_trip(gw: RunningGateway) -> None:
    ask = {**REQUEST, "tools": [WEATHER_TOOL], "tool_choice": "required"}
    answer = (await gw.client.post("/v1/responses", json=ask)).json()
    [call] = answer["output"]
    assert call["type"] == "function_call" and call["name"] == "get_weather"
    assert call["id"].startswith("fc_") and call["call_id"] and call["status"] == "completed"
    assert isinstance(orjson.loads(call["arguments"])["city"], str)
    assert answer["tools"][0]["name"] == "get_weather" and answer["tool_choice"] == "required"

    streamed = await gw.client.post("/v1/responses", json={**ask, "stream": True})
    events = response_events(streamed.content)
    added = next(e for e in events if e["type"] == "response.output_item.added")
    assert added["item"]["type"] == "function_call" and added["item"]["arguments"] == ""
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    arguments = "".join(e["delta"] for e in deltas)
    assert orjson.loads(arguments) == orjson.loads(call["arguments"])
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert done["arguments"] == arguments and done["item_id"] == added["item"]["id"]
    assert events[-1]["response"]["output"][0]["arguments"] == arguments

    follow_up = {
        **REQUEST,
        "tools": [WEATHER_TOOL],
        "tool_choice": "none",
        "input": [
            {"role": "user", "content": "weather in Oslo?"},
            call,
            {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"},
        ],
    }
    final = await gw.client.post("/v1/responses", json=follow_up)
    assert final.status_code == 200, final.text
    assert final.json()["output"][0]["type"] == "message"


class CaptureBackend:
    """Records what the gateway forwards; answers as an OpenAI engine that reasons."""

    REPLY: dict[str, Any] = {
        "id": "chatcmpl-c",
        "object": "chat.completion",
        "model": "upstream-name",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "4", "reasoning_content": "2+2"},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 50,
            "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 32},
            "completion_tokens_details": {"reasoning_tokens": 6},
        },
    }
    CHUNKS = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "2+"}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "2"}}]},
        {"choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": "stop"}]},
        {"choices": [], "usage": REPLY["usage"]},
    ]

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.bodies.append(body)
        if not body["stream"]:
            return Response(orjson.dumps(self.REPLY), media_type="application/json")
        return StreamingResponse(self._events(), media_type="text/event-stream")

    async def _events(self) -> AsyncIterator[bytes]:
        for chunk in self.CHUNKS:
            meta = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "x"}
            yield b"data: " + orjson.dumps({**meta, **chunk}) + b"\n\n"
        yield b"data: [DONE]\n\n"


@pytest.fixture
async def capture(
    start_gateway: StartGateway,
) -> AsyncIterator[tuple[CaptureBackend, RunningGateway]]:
    backend = CaptureBackend()
    server = LoopbackServer(backend.app, lifespan="off")
    await server.start()
    gw = await start_gateway(make_config({"cap": server.url + "/v1"}, model="upstream-name"))
    yield backend, gw
    await server.stop()


async def test_backend_gets_chat_and_client_gets_a_response(
    capture: tuple[CaptureBackend, RunningGateway],
) -> None:
    backend, gw = capture
    request = {
        **REQUEST,
        "reasoning": {"effort": "low", "summary": "auto"},
        "text": {"format": {"type": "json_object"}},
        "temperature": 0.2,
        "user": "someone",
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    response = await gw.client.post("/v1/responses", json=request)
    assert response.status_code == 200, response.text
    assert backend.bodies == [
        {
            "model": "upstream-name",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "hello there"},
            ],
            "stream": False,
            "max_completion_tokens": 12,
            "temperature": 0.2,
            "reasoning_effort": "low",
            "response_format": {"type": "json_object"},
            "user": "someone",
        }
    ]
    answer = response.json()
    assert answer["model"] == "default" and answer["status"] == "completed"
    reasoning, message = answer["output"]
    assert reasoning["type"] == "reasoning"
    assert reasoning["summary"] == [{"type": "summary_text", "text": "2+2"}]
    assert message["content"][0]["text"] == "4"
    assert answer["usage"] == {
        "input_tokens": 50,
        "input_tokens_details": {"cached_tokens": 32},
        "output_tokens": 9,
        "output_tokens_details": {"reasoning_tokens": 6},
        "total_tokens": 59,
    }
    assert answer["reasoning"] == {"effort": "low", "summary": "auto"}
    assert answer["text"] == {"format": {"type": "json_object"}}


async def test_streamed_reasoning_is_a_summary(
    capture: tuple[CaptureBackend, RunningGateway],
) -> None:
    backend, gw = capture
    response = await gw.client.post("/v1/responses", json={**REQUEST, "stream": True})
    assert backend.bodies[0]["stream_options"] == {"include_usage": True}
    events = response_events(response.content)
    assert kinds(events) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        *TEXT_ITEM_EVENTS,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[6]["text"] == "2+2"
    final = events[-1]["response"]
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    assert final["usage"]["output_tokens_details"] == {"reasoning_tokens": 6}

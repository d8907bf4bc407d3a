"""Anthropic's thinking across turns: signed blocks come back unchanged, redacted thinking
round-trips, and a continued tool-use turn keeps its thinking first; else a 400."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from emulator.server import EmulatorServer
from emulator.wire.anthropic_thinking import REDACTED_THINKING_TRIGGER
from tests.emulator.conftest import ANTHROPIC_HEADERS, MODEL, sse_events
from tests.emulator.wire.test_anthropic_format import WEATHER, message_request

anthropic = pytest.importorskip(
    "anthropic", reason="the anthropic SDK is not installed (pip install -e '.[dev]')"
)

THINKING = {"type": "enabled", "budget_tokens": 1024}
QUESTION = {"role": "user", "content": "weather in example?"}


async def _post(http: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    return await http.post("/v1/messages", json=body, headers=ANTHROPIC_HEADERS)


async def _first_turn(http: httpx.AsyncClient, question: dict[str, Any] = QUESTION) -> Any:
    """The assistant's content for a question that makes it think, then call a tool."""
    body = message_request(max_tokens=2048, thinking=THINKING, tools=[WEATHER], messages=[question])
    response = await _post(http, body)
    assert response.status_code == 200, response.text
    return response.json()["content"]


def _tool_turn(assistant: list[Any], question: dict[str, Any] = QUESTION) -> dict[str, Any]:
    """The next request: the assistant's turn as given, then the tool's result."""
    call = next(block for block in assistant if block["type"] == "tool_use")
    result = {"type": "tool_result", "tool_use_id": call["id"], "content": "sunny"}
    messages = [question, {"role": "assistant", "content": assistant}]
    messages.append({"role": "user", "content": [result]})
    return message_request(max_tokens=2048, thinking=THINKING, tools=[WEATHER], messages=messages)


def _error(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    message: str = body["error"]["message"]
    return message


async def test_signed_thinking_is_accepted_on_the_next_turn(
    root_client: httpx.AsyncClient,
) -> None:
    assistant = await _first_turn(root_client)
    assert [block["type"] for block in assistant] == ["thinking", "tool_use"]
    response = await _post(root_client, _tool_turn(assistant))
    assert response.status_code == 200, response.text
    assert response.json()["content"][-1]["type"] == "text"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"signature": "AAAA"}, "messages.1.content.0: Invalid `signature` in `thinking` block"),
        ({"signature": ""}, "messages.1.content.0: Invalid `signature` in `thinking` block"),
        ({"thinking": "edited"}, "messages.1.content.0: Invalid `signature` in `thinking` block"),
        ({"signature": None}, "messages.1.content.0.thinking.signature: Field required"),
    ],
)
async def test_edited_or_unsigned_thinking_is_refused(
    root_client: httpx.AsyncClient, change: dict[str, Any], expected: str
) -> None:
    thinking, call = await _first_turn(root_client)
    edited = {key: value for key, value in {**thinking, **change}.items() if value is not None}
    assert _error(await _post(root_client, _tool_turn([edited, call]))) == expected


async def test_thinking_in_an_earlier_turn_is_checked_too(root_client: httpx.AsyncClient) -> None:
    forged = {"type": "thinking", "thinking": "I made this up", "signature": "Zm9yZ2Vk"}
    earlier = {"role": "assistant", "content": [forged, {"type": "text", "text": "hi"}]}
    messages = [QUESTION, earlier, {"role": "user", "content": "and tomorrow?"}]
    message = _error(await _post(root_client, message_request(messages=messages)))
    assert message.startswith("messages.1.content.0: Invalid `signature`")


async def test_a_tool_turn_continued_without_its_thinking_is_refused(
    root_client: httpx.AsyncClient,
) -> None:
    _, call = await _first_turn(root_client)
    message = _error(await _post(root_client, _tool_turn([call])))
    assert message.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`. When `thinking` is enabled, a final `assistant` message must start "
        "with a thinking block"
    )
    text_first = [{"type": "text", "text": "Let me look."}, call]
    assert "but found `text`" in _error(await _post(root_client, _tool_turn(text_first)))
    # Without thinking the same history is fine: the rule is thinking's.
    plain = {**_tool_turn([call]), "thinking": {"type": "disabled"}}
    assert (await _post(root_client, plain)).status_code == 200


async def test_redacted_thinking_round_trips(root_client: httpx.AsyncClient) -> None:
    question = {"role": "user", "content": f"weather? {REDACTED_THINKING_TRIGGER}"}
    assistant = await _first_turn(root_client, question)
    redacted, call = assistant
    assert set(redacted) == {"type", "data"} and redacted["type"] == "redacted_thinking"
    assert call["type"] == "tool_use"
    response = await _post(root_client, _tool_turn(assistant, question))
    assert response.status_code == 200, response.text
    # Each answer's data is its own, and none is readable thinking.
    again = await _first_turn(root_client, question)
    assert again[0]["data"] != redacted["data"]


@pytest.mark.parametrize("data", ["", "bm90IG91cnM=", "not base64!", "A" * 64])
async def test_tampered_redacted_data_is_refused(root_client: httpx.AsyncClient, data: str) -> None:
    question = {"role": "user", "content": f"weather? {REDACTED_THINKING_TRIGGER}"}
    _, call = await _first_turn(root_client, question)
    tampered = {"type": "redacted_thinking", "data": data}
    message = _error(await _post(root_client, _tool_turn([tampered, call], question)))
    assert message == "messages.1.content.0: Invalid `data` in `redacted_thinking` block"


async def test_the_trigger_without_thinking_changes_nothing(
    root_client: httpx.AsyncClient,
) -> None:
    body = message_request(messages=[{"role": "user", "content": REDACTED_THINKING_TRIGGER}])
    response = await _post(root_client, body)
    assert [block["type"] for block in response.json()["content"]] == ["text"]


async def test_a_redacted_block_streams_whole_without_deltas(
    root_client: httpx.AsyncClient,
) -> None:
    question = {"role": "user", "content": REDACTED_THINKING_TRIGGER}
    body = message_request(max_tokens=2048, thinking=THINKING, messages=[question], stream=True)
    response = await _post(root_client, body)
    events = [data for _, data in sse_events(response.text)]
    first_block = [event for event in events if event.get("index") == 0]
    assert [event["type"] for event in first_block] == ["content_block_start", "content_block_stop"]
    block = first_block[0]["content_block"]
    assert block["type"] == "redacted_thinking" and block["data"]
    texts = [event for event in events if event.get("index") == 1]
    assert texts[0]["content_block"]["type"] == "text"
    assert events[-2]["usage"]["output_tokens"] == 2048  # the thinking counts, unseen


async def test_sdk_turns_with_signed_and_redacted_thinking(emulator: EmulatorServer) -> None:
    async with anthropic.AsyncAnthropic(base_url=emulator.origin, api_key="x") as sdk:
        for text in ("weather?", f"weather? {REDACTED_THINKING_TRIGGER}"):
            question: Any = {"role": "user", "content": text}
            kwargs: Any = {"model": MODEL, "max_tokens": 2048, "thinking": THINKING}
            kwargs["tools"] = [WEATHER]
            async with sdk.messages.stream(messages=[question], **kwargs) as stream:
                first = await stream.get_final_message()
            call = first.content[-1]
            assert call.type == "tool_use"
            result = {"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}
            history: Any = [
                question,
                {"role": "assistant", "content": first.content},
                {"role": "user", "content": [result]},
            ]
            second = await sdk.messages.create(messages=history, **kwargs)
            assert second.content[-1].type == "text"
            history[1] = {"role": "assistant", "content": first.content[1:]}
            with pytest.raises(anthropic.BadRequestError, match="Expected `thinking`"):
                await sdk.messages.create(messages=history, **kwargs)
    assert [first.content[0].type] == ["redacted_thinking"]

"""`POST /v1/messages/count_tokens`: the prompt as the backend would see it, counted."""

from __future__ import annotations

from typing import Any

from gateway.http.anthropic_ingress.count_tokens import (
    EXACT_CHARS,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    prompt_tokens,
)
from gateway.http.chat_messages import ChatMessage
from gateway.prefix.token_count import TokenCounter
from tests.conftest import RunningGateway

IMAGE = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
TOOL = {"name": "get", "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}


async def count(gw: RunningGateway, **fields: Any) -> int:
    body = {"model": "default", "messages": [{"role": "user", "content": "hello"}], **fields}
    response = await gw.client.post("/v1/messages/count_tokens", json=body)
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"input_tokens"}
    tokens: int = response.json()["input_tokens"]
    return tokens


async def test_counts_grow_with_what_the_prompt_holds(gw: RunningGateway) -> None:
    plain = await count(gw)
    assert plain > 0
    assert await count(gw, system="You are a careful assistant.") > plain
    assert await count(gw, tools=[TOOL]) > plain
    with_image = await count(gw, messages=[{"role": "user", "content": [IMAGE]}])
    assert with_image >= IMAGE_TOKENS
    turns = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "get", "input": {"q": "Oslo"}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": "rain"}],
        },
    ]
    assert await count(gw, messages=turns) > plain
    assert await count(gw, max_tokens=5, stream=True) == plain, "options do not count"


async def test_refusals_in_anthropic_shape(gw: RunningGateway) -> None:
    unknown = await gw.client.post(
        "/v1/messages/count_tokens",
        json={"model": "nope", "messages": [{"role": "user", "content": "x"}]},
    )
    assert unknown.status_code == 404
    assert unknown.json()["error"]["type"] == "not_found_error"
    malformed = await gw.client.post("/v1/messages/count_tokens", content=b'{"model": "default"}')
    assert malformed.status_code == 400
    assert malformed.json()["error"]["type"] == "invalid_request_error"


class RecordingCounter(TokenCounter):
    def __init__(self) -> None:
        super().__init__()
        self.exact: list[bool] = []

    def count(self, text: str, *, exact: bool = True) -> int:
        self.exact.append(exact)
        return len(text) // 4


def test_exact_encoding_is_bounded_per_request() -> None:
    counter = RecordingCounter()
    half = "x" * (EXACT_CHARS // 2)
    messages: list[ChatMessage] = [{"role": "user", "content": half} for _ in range(3)]
    tokens = prompt_tokens(counter, messages, [])
    assert counter.exact == [True, True, False], "past the budget, texts are estimated"
    assert tokens == 3 * (len(half) // 4 + MESSAGE_OVERHEAD_TOKENS)

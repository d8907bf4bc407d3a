"""The OpenAI chat request the gateway builds from a Messages request (a TypedDict: built
here, serialised by orjson as it is): the frame, messages and tools of
`gateway.http.chat_messages`, and the options a Messages request can ask for.
"""

from __future__ import annotations

from typing import Literal, NotRequired

from gateway.http.chat_messages import ChatRequestFrame

ReasoningEffort = Literal["low", "medium", "high"]


class ChatRequest(ChatRequestFrame):
    max_tokens: int
    stop: NotRequired[list[str]]
    reasoning_effort: NotRequired[ReasoningEffort]
    user: NotRequired[str]
    """`metadata.user_id`: the session key, as OpenAI's `user` is."""

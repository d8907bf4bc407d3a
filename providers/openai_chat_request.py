"""The OpenAI chat-completions request, as the adapters that translate it read it.

What every translation reads alike lives here: tool calls and function definitions, the
stream options, the limits and sampling options, and the request's frame, generic in
its messages. Each adapter subclasses `ChatRequestBase` with the messages it can
translate and the options of its own, and refuses by name, in its own module, what its
API cannot honour: those lists differ (`anthropic.chat_request`, `gemini.generation`).
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field

CHAT_PATH = "/chat/completions"
"""Where a chat request is sent, relative to the base URL: all a translating adapter serves."""

MessageT = TypeVar("MessageT")

ToolChoiceMode = Literal["none", "auto", "required"]


class OpenAIWire(BaseModel):
    # Lenient: clients send fields an adapter does not read (`name`, `detail`, ...), and
    # they do not change what the model is asked.
    model_config = ConfigDict(extra="ignore", frozen=True)


class ImageUrl(OpenAIWire):
    url: str


class FunctionCall(OpenAIWire):
    name: str
    arguments: str = ""
    """A JSON object as text; empty reads as `{}`."""

    def arguments_object(self) -> dict[str, Any] | None:
        """The arguments parsed, or None when they are not a JSON object."""
        try:
            parsed = orjson.loads(self.arguments or "{}")
        except orjson.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None


class ToolCall(OpenAIWire):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class FunctionDefinition(OpenAIWire):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class NamedFunction(OpenAIWire):
    name: str


class StreamOptions(OpenAIWire):
    include_usage: bool = False


class ChatRequestBase(OpenAIWire, Generic[MessageT]):
    """The request's frame and the options every adapter reads alike."""

    model: str
    messages: list[MessageT] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    stop: str | list[str] | None = None
    seed: int | None = None

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage

    @property
    def output_limit(self) -> int | None:
        """`max_completion_tokens`, or `max_tokens`, the older name it replaced."""
        return self.max_completion_tokens or self.max_tokens

    @property
    def stop_sequences(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else self.stop or []

"""The OpenAI chat-completions request, as the Anthropic adapter accepts it.

Parsed with pydantic so a malformed or untranslatable request fails with a message that
names the field. The parts every translating adapter reads alike are
`providers/openai_chat_request.py`'s (re-exported here); the messages are strict, part by
part. Options the Messages API has no equivalent for are modelled with their OpenAI
defaults: a request that leaves them at the default is served, one that asks for
something else is refused (`unsupported_options`), never silently answered differently.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from providers.openai_chat_request import ChatRequestBase, OpenAIWire, ToolChoiceMode
from providers.openai_chat_request import FunctionCall as FunctionCall  # re-exported
from providers.openai_chat_request import FunctionDefinition as FunctionDefinition
from providers.openai_chat_request import ImageUrl as ImageUrl
from providers.openai_chat_request import NamedFunction as NamedFunction
from providers.openai_chat_request import StreamOptions as StreamOptions
from providers.openai_chat_request import ToolCall as ToolCall


class CacheControl(BaseModel):
    """Anthropic's prompt-cache breakpoint, as clients put it on OpenAI content parts,
    messages and tools (the convention of OpenAI-format gateways in front of Claude)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["ephemeral"]
    ttl: Literal["5m", "1h"] | None = None


class Cacheable(OpenAIWire):
    cache_control: CacheControl | None = None


class TextPart(Cacheable):
    type: Literal["text"]
    text: str


class ImagePart(Cacheable):
    type: Literal["image_url"]
    image_url: ImageUrl


class RefusalPart(Cacheable):
    type: Literal["refusal"]
    refusal: str


UserPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]
AssistantPart = Annotated[TextPart | RefusalPart, Field(discriminator="type")]


class SystemMessage(Cacheable):
    role: Literal["system", "developer"]
    content: str | list[TextPart]


class UserMessage(Cacheable):
    role: Literal["user"]
    content: str | list[UserPart]


class AssistantMessage(Cacheable):
    role: Literal["assistant"]
    content: str | list[AssistantPart] | None = None
    tool_calls: list[ToolCall] = []


class ToolMessage(Cacheable):
    role: Literal["tool"]
    tool_call_id: str
    content: str | list[TextPart]


ChatMessage = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]


class FunctionTool(Cacheable):
    type: Literal["function"]
    function: FunctionDefinition


class NamedToolChoice(OpenAIWire):
    type: Literal["function"]
    function: NamedFunction


class ThinkingOption(BaseModel):
    """Anthropic's own `thinking` object, passed through by clients that know it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["enabled", "disabled"]
    budget_tokens: int | None = Field(None, ge=1)


class ResponseFormat(OpenAIWire):
    type: str


ReasoningEffort = Literal["none", "minimal", "low", "medium", "high"]


class ChatRequest(ChatRequestBase[ChatMessage]):
    """Unknown top-level keys are kept (`model_extra`) so they can be refused by name."""

    model_config = ConfigDict(extra="allow", frozen=True)

    top_k: int | None = None
    tools: list[FunctionTool] | None = None
    tool_choice: ToolChoiceMode | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: ReasoningEffort | None = None
    thinking: ThinkingOption | None = None
    user: str | None = None
    # Accepted and without effect: they ask nothing of the model's output (`seed` too).
    store: bool | None = None
    metadata: dict[str, str] | None = None
    service_tier: str | None = None
    # No Messages API equivalent: served only at their OpenAI defaults.
    n: int = 1
    logprobs: bool = False
    top_logprobs: int | None = None
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    logit_bias: dict[str, float] | None = None
    response_format: ResponseFormat | None = None


def sets_cache_control(request: ChatRequest) -> bool:
    """Whether the client placed any prompt-cache breakpoint of its own."""
    items: list[Cacheable] = [*(request.tools or ())]
    for message in request.messages:
        items.append(message)
        content = message.content
        if isinstance(content, list):
            items.extend(content)
    return any(item.cache_control is not None for item in items)


def unsupported_options(request: ChatRequest) -> list[str]:
    """The options this request sets that a Messages API backend cannot honour."""
    refused = sorted(request.model_extra or {})
    checks = {
        "n": request.n != 1,
        "logprobs": request.logprobs,
        "top_logprobs": request.top_logprobs is not None,
        "frequency_penalty": request.frequency_penalty != 0,
        "presence_penalty": request.presence_penalty != 0,
        "logit_bias": bool(request.logit_bias),
        "response_format": request.response_format is not None
        and request.response_format.type != "text",
    }
    return refused + [name for name, is_set in checks.items() if is_set]


class UntranslatableRequest(ValueError):
    """The request cannot be expressed in the Messages API; `param` names the culprit."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


def parse_chat_request(raw: bytes) -> ChatRequest:
    """The request, validated, with nothing set that the Messages API cannot honour."""
    try:
        request = ChatRequest.model_validate_json(raw)
    except ValidationError as exc:
        raise _untranslatable(exc) from None
    refused = unsupported_options(request)
    if refused:
        raise UntranslatableRequest(
            f"unsupported parameter(s) for an Anthropic backend: {', '.join(refused)}",
            param=refused[0],
        )
    return request


def _untranslatable(exc: ValidationError) -> UntranslatableRequest:
    # Of the branches a union tried, the deepest error is the one that names the problem
    # (the bad part inside a list, not "content is not a string").
    error = max(exc.errors(include_url=False), key=lambda e: len(e["loc"]))
    # Drop the union-branch labels pydantic puts in the path ("list[...]", "str").
    path = ".".join(str(p) for p in error["loc"] if "[" not in str(p) and p != "str")
    message = f"{path}: {error['msg']}" if path else error["msg"]
    return UntranslatableRequest(message, param=path or None)

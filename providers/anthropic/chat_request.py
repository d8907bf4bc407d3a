"""The OpenAI chat-completions request, as the Anthropic adapter accepts it.

Parsed with pydantic so a malformed or untranslatable request fails with a message that
names the field. Options the Messages API has no equivalent for are modelled with their
OpenAI defaults: a request that leaves them at the default is served, one that asks for
something else is refused (`unsupported_options`), never silently answered differently.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class _Wire(BaseModel):
    # Messages and parts tolerate fields they do not use (`name`, `detail`, ...): they do
    # not change what the model is asked.
    model_config = ConfigDict(extra="ignore", frozen=True)


class TextPart(_Wire):
    type: Literal["text"]
    text: str


class ImageUrl(_Wire):
    url: str


class ImagePart(_Wire):
    type: Literal["image_url"]
    image_url: ImageUrl


class RefusalPart(_Wire):
    type: Literal["refusal"]
    refusal: str


UserPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]
AssistantPart = Annotated[TextPart | RefusalPart, Field(discriminator="type")]


class SystemMessage(_Wire):
    role: Literal["system", "developer"]
    content: str | list[TextPart]


class UserMessage(_Wire):
    role: Literal["user"]
    content: str | list[UserPart]


class FunctionCall(_Wire):
    name: str
    arguments: str = ""


class ToolCall(_Wire):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class AssistantMessage(_Wire):
    role: Literal["assistant"]
    content: str | list[AssistantPart] | None = None
    tool_calls: list[ToolCall] = []


class ToolMessage(_Wire):
    role: Literal["tool"]
    tool_call_id: str
    content: str | list[TextPart]


ChatMessage = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]


class FunctionDefinition(_Wire):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class FunctionTool(_Wire):
    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(_Wire):
    name: str


class NamedToolChoice(_Wire):
    type: Literal["function"]
    function: NamedFunction


class StreamOptions(_Wire):
    include_usage: bool = False


class ThinkingOption(BaseModel):
    """Anthropic's own `thinking` object, passed through by clients that know it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["enabled", "disabled"]
    budget_tokens: int | None = Field(None, ge=1)


class ResponseFormat(_Wire):
    type: str


ReasoningEffort = Literal["none", "minimal", "low", "medium", "high"]


class ChatRequest(BaseModel):
    """The top level: unknown keys are kept (`model_extra`) so they can be refused by name."""

    model_config = ConfigDict(extra="allow", frozen=True)

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: str | list[str] | None = None
    tools: list[FunctionTool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: ReasoningEffort | None = None
    thinking: ThinkingOption | None = None
    user: str | None = None
    # Accepted and without effect: they ask nothing of the model's output.
    seed: int | None = None
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

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage


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

"""OpenAI's Responses request as clients send it: validated, with errors naming the field.

Unknown top-level fields are ignored (SDKs add options over time; `include`, `truncation`,
`service_tier`, `prompt_cache_key`, `text.verbosity` and the like are accepted and not
acted on). What a stateless gateway cannot serve is refused first (`unsupported`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.config.bounds import (
    DEFAULT_BOUNDS,
    BoundsConfig,
    check_chars,
    check_count,
    check_tokens,
)
from gateway.errors import InvalidRequest
from gateway.http.responses_ingress.input_items import InputItem
from gateway.http.responses_ingress.unsupported import refuse_unsupported

MAX_METADATA_PAIRS = 16
"""OpenAI's own limit on `metadata`."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class FunctionTool(_Wire):
    type: Literal["function"]
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class NamedFunction(_Wire):
    type: Literal["function"]
    name: str = Field(min_length=1)


ToolChoice = Literal["auto", "none", "required"] | NamedFunction

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class Reasoning(_Wire):
    effort: ReasoningEffort | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None
    """Accepted: a backend's reasoning text is always returned, as a summary."""


class PlainText(_Wire):
    type: Literal["text"]


class JsonObject(_Wire):
    type: Literal["json_object"]


class JsonSchema(_Wire):
    type: Literal["json_schema"]
    name: str = Field(min_length=1)
    json_schema: dict[str, Any] = Field(alias="schema")
    description: str | None = None
    strict: bool | None = None


TextFormat = Annotated[PlainText | JsonObject | JsonSchema, Field(discriminator="type")]


class TextConfig(_Wire):
    format: TextFormat | None = None


class ResponsesRequest(_Wire):
    """A `POST /v1/responses` body."""

    model: str = Field(min_length=1)
    input: str | Annotated[list[InputItem], Field(min_length=1)]
    instructions: str | None = None
    tools: list[FunctionTool] = Field(default_factory=list)
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    reasoning: Reasoning | None = None
    text: TextConfig | None = None
    stream: bool = False
    metadata: dict[str, str] | None = Field(None, max_length=MAX_METADATA_PAIRS)
    user: str | None = None


def parse_responses_request(raw: bytes, bounds: BoundsConfig = DEFAULT_BOUNDS) -> ResponsesRequest:
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise InvalidRequest("request body must be a JSON object")
    refuse_unsupported(document, bounds.max_messages)
    try:
        request = ResponsesRequest.model_validate(document)
    except ValidationError as exc:
        raise _invalid(exc, document) from None
    check_bounds(request, bounds)
    return request


def check_bounds(request: ResponsesRequest, bounds: BoundsConfig) -> None:
    """The request's counts, budget and names within `bounds`, in its own field names."""
    check_chars("model", request.model, bounds.max_name_chars)
    check_chars("user", request.user, bounds.max_name_chars)
    check_count("tools", len(request.tools), bounds.max_tools)
    check_tokens("max_output_tokens", request.max_output_tokens, bounds.max_output_tokens)


def _invalid(exc: ValidationError, document: dict[str, Any]) -> InvalidRequest:
    # Of the branches a union tried, the deepest error names the problem (the bad part
    # inside an item, not "input is not a string"), and of two as deep, not that one.
    error = max(
        exc.errors(include_url=False),
        key=lambda e: (len(e["loc"]), e["type"] != "string_type"),
    )
    path = _path(document, error["loc"])
    return InvalidRequest(f"{path}: {error['msg']}" if path else error["msg"], param=path or None)


def _path(document: Any, loc: tuple[str | int, ...]) -> str:
    """The error's location in the client's document. Pydantic's also names the union
    branches and tags it tried ("str", "list[...]", "function_call"): walking the document
    along it leaves them out."""
    node, parts = document, []
    for position, step in enumerate(loc):
        if _has(node, step):
            node = node[step]
        elif not (position == len(loc) - 1 and isinstance(node, dict)):
            continue  # a branch or a tag; a missing field is named below
        parts.append(str(step))
    return ".".join(parts)


def _has(node: Any, step: str | int) -> bool:
    if isinstance(node, list):
        return isinstance(step, int) and step < len(node)
    return isinstance(node, dict) and step in node

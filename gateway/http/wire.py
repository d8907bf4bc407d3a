"""Request wire formats: the fields the gateway reads; everything else passes through."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.datastructures import Headers

from gateway.config.bounds import (
    DEFAULT_BOUNDS,
    BoundsConfig,
    check_chars,
    check_count,
    check_n,
    check_tokens,
)
from gateway.config.placement import NO_REQUIREMENT, TagRequirement, header_tags
from gateway.errors import InvalidRequest, PayloadTooLarge
from gateway.routing.router import RequestTraits
from policies.snapshot import Endpoint
from providers.base import NativeRequest, UpstreamRequest


class _Head(BaseModel):
    # Unknown fields are the backend's business: they are forwarded untouched.
    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1)
    stream: bool = False
    user: str | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = Field(min_length=1)


class _ChatFields(_Head):
    """A chat request's fields but its messages (`ChatHead` and `_CheckedChatHead`)."""

    stream_options: StreamOptions | None = None
    n: int = Field(1, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    tools: list[dict[str, Any]] | None = None


class ChatHead(_ChatFields):
    messages: list[ChatMessage] = Field(min_length=1)


class _CheckedChatHead(_ChatFields):
    """`ChatHead` for messages already seen to be objects with a non-empty string role
    (`_roles_ok`), all `ChatMessage` asks of them: no model made per message (each kept a
    copy of every field: ~0.5 µs a message, 20 µs for a 40-turn conversation)."""

    messages: list[Any] = Field(min_length=1)


def _roles_ok(messages: object) -> bool:
    """Whether `ChatHead` would accept every message: an object with a non-empty string
    `role` (anything else is validated in full, for its exact error)."""
    if type(messages) is not list:
        return False
    for message in messages:
        if type(message) is not dict:
            return False
        role = message.get("role")
        if type(role) is not str or not role:
            return False
    return True


class CompletionHead(_Head):
    prompt: str | list[str] | list[int] | list[list[int]]
    stream_options: StreamOptions | None = None
    n: int = Field(1, ge=1)
    max_tokens: int | None = Field(None, ge=0)


class EmbeddingHead(_Head):
    input: str | list[str] | list[int] | list[list[int]]


HEADS: dict[Endpoint, type[_Head]] = {
    "chat.completions": ChatHead,
    "completions": CompletionHead,
    "embeddings": EmbeddingHead,
}


def parse_body(
    raw: bytes, endpoint: Endpoint, bounds: BoundsConfig | None = DEFAULT_BOUNDS
) -> tuple[dict[str, Any], _Head]:
    """Parse and check a request body; errors name the offending field. `bounds` None: a
    body the gateway translated from another format, whose reading checked its bounds in
    the client's own field names."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidRequest("request body must be a JSON object")
    model = HEADS[endpoint]
    if model is ChatHead and _roles_ok(body.get("messages")):
        model = _CheckedChatHead
    try:
        head = model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise InvalidRequest(f"{param}: {first['msg']}", param=param) from None
    if bounds is not None:
        check_bounds(head, bounds)
    return body, head


def check_bounds(head: _Head, bounds: BoundsConfig) -> None:
    """The request's counts, budgets and names within `bounds` (`gateway.config.bounds`)."""
    check_chars("model", head.model, bounds.max_name_chars)
    check_chars("user", head.user, bounds.max_name_chars)
    if isinstance(head, _ChatFields | CompletionHead):
        check_n(head.n, bounds.max_n)
        check_tokens("max_tokens", head.max_tokens, bounds.max_output_tokens)
    if isinstance(head, ChatHead | _CheckedChatHead):
        check_count("messages", len(head.messages), bounds.max_messages)
        check_count("tools", len(head.tools or ()), bounds.max_tools)
        limit = bounds.max_output_tokens
        check_tokens("max_completion_tokens", head.max_completion_tokens, limit)


class RequestHeaders(dict[str, str]):
    """A request's headers by lowercase name, the first value of a repeated one (as
    Starlette's `Headers` reads them), built once from the ASGI scope: a plain dict, so
    the handful of lookups the proxy makes per request cost what a dict's do. `getlist`
    gives every value of a name, in order."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Iterable[tuple[bytes, bytes]]) -> None:
        super().__init__()
        self._raw = pairs = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in raw]
        for name, value in reversed(pairs):
            self[name] = value

    def getlist(self, name: str) -> list[str]:
        name = name.lower()
        return [value for key, value in self._raw if key == name]


def check_length(content_length: str | None, max_bytes: int) -> None:
    if content_length is None:
        return
    try:
        size = int(content_length)
    except ValueError:
        raise InvalidRequest("invalid Content-Length header") from None
    if size > max_bytes:
        raise PayloadTooLarge(f"request body of {size} bytes exceeds the limit of {max_bytes}")


def traits_of(
    endpoint: Endpoint, body: dict[str, Any], head: _Head, headers: Mapping[str, str]
) -> RequestTraits:
    """The routing-relevant facts of a parsed request."""
    stream = head.stream and endpoint != "embeddings"
    max_tokens = getattr(head, "max_tokens", None)
    if isinstance(head, _ChatFields):
        max_tokens = head.max_completion_tokens or head.max_tokens
    prompt = body.get("prompt") if endpoint == "completions" else None
    if isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
        prompt = "".join(prompt)
    return RequestTraits(
        endpoint=endpoint,
        stream=stream,
        session_key=headers.get("x-session-id") or head.user,
        max_tokens=max_tokens,
        ttft_slo_ms=slo_header(headers.get("x-switchyard-ttft-ms"), "x-switchyard-ttft-ms"),
        tpot_slo_ms=slo_header(headers.get("x-switchyard-tpot-ms"), "x-switchyard-tpot-ms"),
        messages=body.get("messages") if endpoint == "chat.completions" else None,
        tools=body.get("tools"),
        prompt=prompt if isinstance(prompt, str) else None,
        required_tags=required_tags(headers),
    )


class UpstreamBodies:
    """The request to send for each upstream model id a request may ask for: the client's
    bytes as they came for the model it named, else its body with `model` changed (made
    once per model: a retry or a fallback to another member of the same model reuses it).
    With a `plain` body (the request without the client's `cache_control`), that one is
    each request's `body` and the client's its `marked_body`; with a `native` request (the
    client's own, in another API), each carries it, asking for its model too."""

    __slots__ = ("_body", "_made", "_native", "_path", "_plain", "_stream")

    def __init__(
        self,
        path: str,
        raw: bytes,
        body: dict[str, Any],
        client_model: str,
        stream: bool,
        plain: bytes | None = None,
        native: NativeRequest | None = None,
    ) -> None:
        self._path, self._body, self._stream, self._plain = path, body, stream, plain
        self._native = native
        first = UpstreamRequest(path, raw, stream, native=native)
        if plain is not None:
            first = UpstreamRequest(path, plain, stream, marked_body=raw, native=native)
        self._made = {client_model: first}

    def request_for(self, model: str) -> UpstreamRequest:
        made = self._made.get(model)
        if made is None:
            forwarded = orjson.dumps({**self._body, "model": model})
            native = self._native
            if native is not None:
                asked = orjson.dumps({**orjson.loads(native.body), "model": model})
                native = replace(native, body=asked)
            made = UpstreamRequest(self._path, forwarded, self._stream, native=native)
            if self._plain is not None:
                plain = orjson.dumps({**orjson.loads(self._plain), "model": model})
                made = UpstreamRequest(
                    self._path, plain, self._stream, marked_body=forwarded, native=native
                )
            self._made[model] = made
        return made


REQUIRE_TAGS_HEADER = "x-switchyard-require-tags"


def required_tags(headers: Mapping[str, str]) -> TagRequirement:
    """The placement tags the request's header requires (source `header`). Every instance
    of a repeated header counts: a constraint is never dropped for being sent twice."""
    if isinstance(headers, (Headers, RequestHeaders)):
        values = headers.getlist(REQUIRE_TAGS_HEADER)
    else:
        value = headers.get(REQUIRE_TAGS_HEADER)
        values = [] if value is None else [value]
    if not values:
        return NO_REQUIREMENT
    return NO_REQUIREMENT.require("header", header_tags(values, REQUIRE_TAGS_HEADER))


def slo_header(value: str | None, name: str) -> float | None:
    if value is None:
        return None
    try:
        target = float(value)
    except ValueError:
        raise InvalidRequest(f"header {name} must be a number of milliseconds") from None
    if not 0 < target < math.inf:  # also refuses nan and inf
        raise InvalidRequest(f"header {name} must be a positive, finite number of milliseconds")
    return target

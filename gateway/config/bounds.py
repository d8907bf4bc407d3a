"""Bounds on what a client may send and a backend may answer: the `bounds` config section
and the checks the ingresses share, each error naming the field and the limit.

A body's size is bounded while it is read (`server.max_body_bytes`), its nesting depth
before any ingress parses it (`check_depth`), counts, token budgets and names by each
ingress in its own field names (OpenAI's, Anthropic's Messages, the Responses API). What a
backend answers is bounded by the HTTP layer under every adapter
(`providers.transport.http_transport`), with the two `max_upstream_*` keys.
"""

from __future__ import annotations

from itertools import accumulate

from pydantic import Field

from gateway.config.backends import StrictConfig
from gateway.errors import InvalidRequest
from providers.base import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_STREAM_BYTES


class BoundsConfig(StrictConfig):
    """Every bound on bad input; a request over one gets a 400 naming the field."""

    max_json_depth: int = Field(
        64,
        ge=8,
        le=200,
        description="Nesting of objects and arrays in a request body. At most 200: the "
        "gateway re-encodes bodies (orjson: 254 levels at most) after translating them "
        "(a few levels more), and pydantic reads 200.",
    )
    max_messages: int = Field(
        4096, ge=1, description="Chat and Anthropic `messages`, Responses `input` items."
    )
    max_tools: int = Field(512, ge=0, description="Tools declared by one request.")
    max_output_tokens: int = Field(
        262_144,
        ge=1,
        description="Cap on `max_tokens`, `max_completion_tokens`, `max_output_tokens`.",
    )
    max_n: int = Field(16, ge=1, le=128, description="Choices asked for by one request (`n`).")
    max_name_chars: int = Field(
        256, ge=16, description="`model`, and the session keys `user` and `metadata.user_id`."
    )
    max_upstream_body_bytes: int = Field(
        DEFAULT_MAX_BODY_BYTES, ge=65_536, description="A backend's whole (non-streamed) answer."
    )
    max_upstream_stream_bytes: int = Field(
        DEFAULT_MAX_STREAM_BYTES, ge=65_536, description="All the bytes of one streamed answer."
    )


DEFAULT_BOUNDS = BoundsConfig()
"""The defaults, for readers of a body outside a running gateway (tests, benchmarks)."""

LIMIT_EXCEEDED = "limit_exceeded"
"""The error code of every bound but the body's size (413 `request_too_large`)."""

_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def check_depth(raw: bytes, max_depth: int) -> None:
    """Refuse a body nested deeper than `max_depth` before anything parses it: the code
    that walks and re-encodes a document recurses (orjson encodes 254 levels at most).

    Most bodies have fewer brackets than the limit, which two counts show; the others cost
    a few passes in C (strings dropped, brackets kept) and one step per bracket."""
    if raw.count(b"{") + raw.count(b"[") <= max_depth:
        return
    deepest = max(accumulate(_STEP[b] for b in _structural_brackets(raw)), default=0)
    if deepest > max_depth:
        raise InvalidRequest(
            f"request body nests {deepest} levels deep; the limit is {max_depth}",
            code=LIMIT_EXCEEDED,
        )


def _structural_brackets(raw: bytes) -> bytes:
    """The brackets of `raw` outside its strings. Escaped backslashes go first, then
    escaped quotes, so that every quote left opens or closes a string."""
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"") if b"\\" in raw else raw
    outside = b"".join(unescaped.split(b'"')[::2])
    return outside.translate(None, _NOT_BRACKETS)


def check_count(field: str, count: int, limit: int) -> None:
    """`field` (a list) holds at most `limit` items."""
    if count > limit:
        raise InvalidRequest(
            f"{field}: {count} items, more than the limit of {limit}",
            param=field,
            code=LIMIT_EXCEEDED,
        )


def check_tokens(field: str, value: int | None, limit: int) -> None:
    """A token budget the client asks for is at most `limit` (its lower bound is the
    wire model's: positive, or for legacy completions zero)."""
    if value is not None and value > limit:
        raise InvalidRequest(
            f"{field}: {value} is more than the limit of {limit} tokens",
            param=field,
            code=LIMIT_EXCEEDED,
        )


def check_n(value: int, limit: int) -> None:
    if value > limit:
        raise InvalidRequest(
            f"n: {value} choices, more than the limit of {limit}", param="n", code=LIMIT_EXCEEDED
        )


def check_chars(field: str, value: str | None, limit: int) -> None:
    """A name the gateway keys state by (a route, a session) is at most `limit` characters."""
    if value is not None and len(value) > limit:
        raise InvalidRequest(
            f"{field}: {len(value)} characters, more than the limit of {limit}",
            param=field,
            code=LIMIT_EXCEEDED,
        )

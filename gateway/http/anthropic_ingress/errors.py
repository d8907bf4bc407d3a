"""The one mapping of the gateway's error tree to Anthropic's error shape.

`{"type": "error", "error": {"type": ..., "message": ...}}`, as a response or as a
stream's `event: error`. The status stays the gateway's (a 502 is still a 502); the type
is Anthropic's for that status, so the Anthropic SDKs raise their usual exception
classes. A backend's own 4xx keeps its status and its message, read from its body.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import orjson
from starlette.responses import Response

from gateway.http.anthropic_ingress.messages_reply import ErrorBody, event
from gateway.http.responses import error_headers
from providers.errors import ApiError, UpstreamStatusError

ERROR_TYPES: Mapping[int, str] = MappingProxyType(
    {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        500: "api_error",
        503: "overloaded_error",
        529: "overloaded_error",
    }
)
"""Anthropic's error type per status; other 4xx read `invalid_request_error`, other 5xx
(502 and 504 among them) `api_error`, as Anthropic's API documents."""

_MAX_MESSAGE_CHARS = 2_000


def error_type(status: int) -> str:
    known = ERROR_TYPES.get(status)
    if known is not None:
        return known
    return "invalid_request_error" if 400 <= status < 500 else "api_error"


def status_of(exc: ApiError) -> int:
    """The status the client gets: a backend's own 4xx is passed on, as on the OpenAI path."""
    if _relays_backend_4xx(exc):
        assert isinstance(exc, UpstreamStatusError)
        return exc.upstream_status
    return exc.status


def error_body(exc: ApiError) -> ErrorBody:
    message = exc.message
    if _relays_backend_4xx(exc):
        assert isinstance(exc, UpstreamStatusError)
        message = _backend_message(exc.upstream_body) or message
    return {"type": "error", "error": {"type": error_type(status_of(exc)), "message": message}}


def error_response(exc: ApiError, headers: dict[str, str] | None = None) -> Response:
    merged = {**(headers or {}), **error_headers(exc)}
    body = orjson.dumps(error_body(exc))
    return Response(body, status_of(exc), merged, "application/json")


def error_event(exc: ApiError) -> bytes:
    """The `event: error` that ends a stream which failed after it started."""
    return event("error", error_body(exc))


def _relays_backend_4xx(exc: ApiError) -> bool:
    return (
        isinstance(exc, UpstreamStatusError)
        and 400 <= exc.upstream_status < 500
        and bool(exc.upstream_body)
    )


def _backend_message(body: bytes) -> str | None:
    """The explanation in a backend's error body: OpenAI's or Anthropic's shape, or
    FastAPI's `detail`; None when there is none to read."""
    try:
        document: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict):
        return None
    error = document.get("error")
    found = error.get("message") if isinstance(error, dict) else error
    found = found or document.get("message") or document.get("detail")
    return found[:_MAX_MESSAGE_CHARS] if isinstance(found, str) and found else None

"""Building HTTP responses: JSON bodies and the one mapping of errors to OpenAI shape.

Both error trees (the gateway's and the providers' `Upstream*`) share the root ApiError,
so every error a client sees, as a response or as a stream's last event, is shaped here.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from providers.errors import ApiError, UpstreamStatusError


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status, headers, media_type="application/json")


def error_body(error: ApiError) -> dict[str, Any]:
    return {
        "error": {
            "message": error.message,
            "type": error.type,
            "param": error.param,
            "code": error.code,
        }
    }


def error_bytes(error: ApiError) -> bytes:
    return orjson.dumps(error_body(error))


def error_headers(error: ApiError) -> dict[str, str]:
    if error.retry_after_s is None:
        return {}
    return {"retry-after": str(max(1, round(error.retry_after_s)))}


def error_response(exc: ApiError, headers: dict[str, str] | None = None) -> Response:
    merged = {**(headers or {}), **error_headers(exc)}
    if (
        isinstance(exc, UpstreamStatusError)
        and 400 <= exc.upstream_status < 500
        and exc.upstream_body
    ):
        # The backend's own 4xx explanation is what the client needs (context too long, ...).
        return Response(exc.upstream_body, exc.upstream_status, merged, "application/json")
    return Response(error_bytes(exc), exc.status, merged, "application/json")


def error_event(error: ApiError) -> bytes:
    """An SSE event that tells a streaming client the response ended in error."""
    return b"data: " + error_bytes(error) + b"\n\n"

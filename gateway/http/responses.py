"""Building HTTP responses: JSON bodies and the single mapping of errors to OpenAI shape."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from gateway.errors import SwitchyardError, UpstreamStatusError


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status, headers, media_type="application/json")


def error_response(exc: SwitchyardError, headers: dict[str, str] | None = None) -> Response:
    merged = {**(headers or {}), **exc.headers()}
    if (
        isinstance(exc, UpstreamStatusError)
        and 400 <= exc.upstream_status < 500
        and exc.upstream_body
    ):
        # The backend's own 4xx explanation is what the client needs (context too long, ...).
        return Response(exc.upstream_body, exc.upstream_status, merged, "application/json")
    return Response(exc.json_bytes(), exc.status, merged, "application/json")

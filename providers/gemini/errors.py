"""The one place Gemini's failures become the provider error tree (providers/errors.py).

Gemini explains an error in its body, `{"error": {"code", "message", "status", "details"}}`,
with a gRPC status name and, for rate limits, a `google.rpc.RetryInfo` detail whose
`retryDelay` ("12.5s") says how long to wait; the same body can arrive as an SSE event
in the middle of a stream. A request the adapter cannot translate is refused with the
tree's `UnsupportedRequest`.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from providers.errors import (
    KeySource,
    UpstreamCredentialsRefused,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamStatusError,
)

_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
_MAX_MESSAGE_CHARS = 500
_CREDENTIAL_STATUSES = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED"})
# Gemini answers HTTP 400 INVALID_ARGUMENT for a bad key; the ErrorInfo reason tells.
_CREDENTIAL_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED", "API_KEY_SERVICE_BLOCKED"})
_HTTP_OF_STATUS = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "INTERNAL": 500,
    "UNKNOWN": 500,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


class GeminiErrors:
    """Maps Gemini error statuses and bodies for one backend; scrubs its key from both."""

    def __init__(self, backend: str, api_key: str | None, api_key_env: str | None = None) -> None:
        self._backend = backend
        self._api_key = api_key
        self._key = KeySource.of(api_key, api_key_env)

    def for_status(self, status: int, body: bytes, retry_after_s: float | None) -> UpstreamError:
        """An error response (the `status_error` hook of the HTTP transport)."""
        return self._error(status, _error_object(body), retry_after_s)

    def for_stream_event(self, error: Any) -> UpstreamError:
        """An `{"error": ...}` event after the stream had started."""
        detail = error if isinstance(error, dict) else {}
        code = detail.get("code")
        status = code if isinstance(code, int) and code >= 400 else None
        if status is None:
            status = _HTTP_OF_STATUS.get(str(detail.get("status")), 500)
        return self._error(status, detail, None)

    def malformed(self, what: str) -> UpstreamProtocolError:
        """A 200 answer the adapter cannot read: the backend's fault, worth another try."""
        return UpstreamProtocolError(f"backend {self._backend} sent {what}", backend=self._backend)

    def _error(
        self, http_status: int, detail: dict[str, Any], retry_after_s: float | None
    ) -> UpstreamError:
        name = str(detail.get("status") or "")
        label = f"{http_status} {name}".strip()
        if http_status in (401, 403) or name in _CREDENTIAL_STATUSES or _bad_key(detail):
            # Never the client's fault, never relayed: see UpstreamCredentialsRefused.
            return UpstreamCredentialsRefused(
                backend=self._backend,
                upstream_status=http_status,
                reason=name or None,
                key=self._key,
            )
        message = self._scrub(str(detail.get("message") or ""))[:_MAX_MESSAGE_CHARS]
        if http_status == 429 or name == "RESOURCE_EXHAUSTED":
            http_status = 429
            if retry_after_s is None:
                retry_after_s = _retry_delay_s(detail)
        return UpstreamStatusError(
            f"backend {self._backend} answered HTTP {label}" + (f": {message}" if message else ""),
            backend=self._backend,
            upstream_status=http_status,
            upstream_body=_openai_error_body(http_status, name, message),
            retry_after_s=retry_after_s,
            said=message or None,
        )

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]") if self._api_key else text


def _error_object(body: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    # The streaming endpoint, asked without alt=sse, wraps its error in a list.
    if isinstance(data, list) and data:
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {}


def _details(detail: dict[str, Any]) -> list[dict[str, Any]]:
    details = detail.get("details")
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def _bad_key(detail: dict[str, Any]) -> bool:
    return any(
        d.get("@type") == _ERROR_INFO and d.get("reason") in _CREDENTIAL_REASONS
        for d in _details(detail)
    )


def _retry_delay_s(detail: dict[str, Any]) -> float | None:
    for entry in _details(detail):
        if entry.get("@type") == _RETRY_INFO:
            match = _DURATION.match(str(entry.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def _openai_error_body(http_status: int, name: str, message: str) -> bytes:
    """What the client is shown for a 4xx, in OpenAI's shape rather than Google's."""
    kind = "rate_limit_error" if http_status == 429 else "invalid_request_error"
    if http_status >= 500:
        kind = "server_error"
    return orjson.dumps(
        {
            "error": {
                "message": message or f"Gemini answered HTTP {http_status}",
                "type": kind,
                "param": None,
                "code": name.lower() or None,
            }
        }
    )

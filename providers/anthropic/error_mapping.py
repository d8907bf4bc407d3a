"""The one place where Anthropic's failures become the providers' error tree.

HTTP statuses with their `{"type": "error", "error": {type, message}}` bodies, `error`
events that arrive after a 200, and requests this adapter cannot translate all end here
as `UpstreamError`s with a status, an OpenAI type/code and whether the next candidate may
help; transport failures and Retry-After are the HTTP layer's (`providers/transport/`).
The API key never appears in a message or a relayed body.
"""

from __future__ import annotations

import orjson
from pydantic import ValidationError

from providers.anthropic.messages_wire import ErrorBody, ErrorDetail
from providers.errors import (
    KeySource,
    UpstreamCredentialsRefused,
    UpstreamProtocolError,
    UpstreamStatusError,
)
from providers.transport.http_transport import retry_after_s as retry_after_s  # re-exported

_MAX_MESSAGE_CHARS = 500

STATUS_OF_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""Anthropic's error types and the HTTP status each comes with; an `error` event in a
stream carries only the type, so its status is read from here."""


class ErrorMapper:
    """Builds one backend's errors; holds its key only to scrub it from upstream text."""

    def __init__(self, backend: str, api_key: str | None, api_key_env: str | None = None) -> None:
        self.backend = backend
        self._secret = api_key or None
        self._key = KeySource.of(api_key, api_key_env)

    def invalid_request(self, message: str, *, param: str | None = None) -> UpstreamStatusError:
        """A request this adapter cannot translate: a 400, not retryable, because the
        request is at fault, not the backend."""
        body = _openai_error(message, "invalid_request_error", "unsupported_by_backend", param)
        return UpstreamStatusError(
            f"backend {self.backend} (anthropic) cannot serve this request: {message}",
            backend=self.backend,
            upstream_status=400,
            upstream_body=body,
        )

    def status_error(
        self, status: int, body: bytes, retry_after_s: float | None
    ) -> UpstreamStatusError:
        """An HTTP error answer (the HTTP layer's `status_error` hook): 429 and 5xx (529
        "overloaded" too) are retryable."""
        said = self._detail(body)
        # Not Anthropic's shape (a proxy's HTML page, an empty body): name the status.
        detail = said or ErrorDetail(type=_type_of_status(status), message=f"HTTP {status}")
        if status in (401, 403):
            return self._credentials_refused(status, detail.type)
        relayed = b""
        if 400 <= status < 500:
            # The client sees the backend's 4xx explanation, in OpenAI's shape.
            relayed = _openai_error(detail.message, detail.type, detail.type, None)
        return UpstreamStatusError(
            f"backend {self.backend} answered HTTP {status} ({detail.type}: {detail.message})",
            backend=self.backend,
            upstream_status=status,
            upstream_body=relayed,
            retry_after_s=retry_after_s,
            said=said.message if said is not None else None,
        )

    def stream_error(self, error: ErrorDetail) -> UpstreamStatusError:
        """An `error` event after the 200: the status its type would have had."""
        status = STATUS_OF_ERROR_TYPE.get(error.type, 500)
        message = self._clean(error.message)
        if status in (401, 403):
            return self._credentials_refused(status, error.type)
        return UpstreamStatusError(
            f"backend {self.backend} sent an error event ({error.type}: {message})",
            backend=self.backend,
            upstream_status=status,
        )

    def protocol_error(self, what: str) -> UpstreamProtocolError:
        return UpstreamProtocolError(f"backend {self.backend} {what}", backend=self.backend)

    def _credentials_refused(self, status: int, error_type: str) -> UpstreamCredentialsRefused:
        # The gateway's own key was refused, not the client's: a retryable 502 without
        # the upstream body (see UpstreamCredentialsRefused).
        return UpstreamCredentialsRefused(
            backend=self.backend, upstream_status=status, reason=error_type, key=self._key
        )

    def _detail(self, body: bytes) -> ErrorDetail | None:
        """The error `body` explains in Anthropic's shape; None when it is not that shape."""
        try:
            detail = ErrorBody.model_validate_json(body).error
        except ValidationError:
            return None
        return ErrorDetail(type=detail.type, message=self._clean(detail.message))

    def _clean(self, message: str) -> str:
        if self._secret and self._secret in message:
            message = message.replace(self._secret, "[redacted]")
        return message[:_MAX_MESSAGE_CHARS]


def _type_of_status(status: int) -> str:
    for error_type, known in STATUS_OF_ERROR_TYPE.items():
        if known == status:
            return error_type
    return "api_error" if status >= 500 else "invalid_request_error"


def _openai_error(message: str, error_type: str, code: str, param: str | None) -> bytes:
    return orjson.dumps(
        {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    )

"""The one place where Anthropic's failures become the providers' error tree.

HTTP statuses with their `{"type": "error", "error": {type, message}}` bodies, `error`
events that arrive after a 200, transport failures, and requests this adapter cannot
translate all end here as `UpstreamError`s with a status, an OpenAI type/code and whether
the next candidate may help. The API key never appears in a message or a relayed body.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from time import time

import aiohttp
import orjson
from pydantic import ValidationError

from providers.anthropic.messages_wire import ErrorBody, ErrorDetail
from providers.errors import (
    UpstreamConnectError,
    UpstreamProtocolError,
    UpstreamStatusError,
    UpstreamTimeout,
)

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

    def __init__(self, backend: str, api_key: str | None) -> None:
        self.backend = backend
        self._secret = api_key or None

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
        self, status: int, body: bytes, retry_after: str | None
    ) -> UpstreamStatusError:
        """An HTTP error answer: 429 and 5xx (529 "overloaded" too) are retryable."""
        detail = self._detail(body, status)
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
            retry_after_s=retry_after_s(retry_after),
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

    @contextmanager
    def map_upstream_errors(self) -> Iterator[None]:
        """Turn transport exceptions into the UpstreamError tree (providers/errors.py)."""
        try:
            yield
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            phase = "connect" if isinstance(exc, aiohttp.ConnectionTimeoutError) else "response"
            raise UpstreamTimeout(
                f"backend {self.backend} timed out ({phase})", backend=self.backend
            ) from None
        except aiohttp.ClientConnectorError as exc:
            raise UpstreamConnectError(
                f"cannot connect to backend {self.backend}: {type(exc).__name__}",
                backend=self.backend,
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise self.protocol_error(f"broke the connection: {type(exc).__name__}") from None

    def _credentials_refused(self, status: int, error_type: str) -> UpstreamStatusError:
        # The gateway's own key was refused, not the client's: the client gets a 502 and
        # none of the upstream body. Not retryable: the key is this deployment's
        # configuration, and retrying cannot change it.
        error = UpstreamStatusError(
            f"backend {self.backend} refused the gateway's credentials "
            f"(HTTP {status} {error_type})",
            backend=self.backend,
            upstream_status=status,
        )
        error.status = 502
        return error

    def _detail(self, body: bytes, status: int) -> ErrorDetail:
        try:
            detail = ErrorBody.model_validate_json(body).error
        except ValidationError:
            # Not Anthropic's shape (a proxy's HTML page, an empty body): name the status.
            return ErrorDetail(type=_type_of_status(status), message=f"HTTP {status}")
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


def retry_after_s(value: str | None) -> float | None:
    """`Retry-After` in seconds: a number, or an HTTP date from now; None if absent or bad."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time())
    except (TypeError, ValueError):
        return None

"""The gateway's error tree and its single mapping to OpenAI-shaped JSON.

SwitchyardError
├── ClientError (4xx: the request is wrong)
│   ├── InvalidRequest 400, Unauthorized 401, NotFound 404, PayloadTooLarge 413
│   └── CapacityExhausted 429
└── UpstreamError (the backend failed; `retryable` says if the next candidate may help)
    ├── UpstreamConnectError 502, UpstreamStatusError (its status), UpstreamProtocolError 502
    ├── UpstreamTimeout 504
    └── NoBackendAvailable 503
"""

from __future__ import annotations

from typing import Any

import orjson


class SwitchyardError(Exception):
    status: int = 500
    type: str = "server_error"
    code: str | None = "internal_error"
    retryable: bool = False

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def json_bytes(self) -> bytes:
        return orjson.dumps(self.body())

    def headers(self) -> dict[str, str]:
        return {}


class ClientError(SwitchyardError):
    status = 400
    type = "invalid_request_error"
    code = "invalid_request"


class InvalidRequest(ClientError):
    pass


class Unauthorized(ClientError):
    status = 401
    type = "authentication_error"
    code = "invalid_api_key"


class NotFound(ClientError):
    status = 404
    code = "model_not_found"


class PayloadTooLarge(ClientError):
    status = 413
    code = "request_too_large"


class CapacityExhausted(ClientError):
    status = 429
    type = "rate_limit_error"
    code = "capacity_exhausted"

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    def headers(self) -> dict[str, str]:
        return {"retry-after": str(max(1, round(self.retry_after_s)))}


class UpstreamError(SwitchyardError):
    status = 502
    type = "upstream_error"
    code = "bad_gateway"
    retryable = True

    def __init__(
        self, message: str, *, backend: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.backend = backend


class UpstreamConnectError(UpstreamError):
    code = "upstream_connect_error"


class UpstreamProtocolError(UpstreamError):
    code = "upstream_protocol_error"


class UpstreamTimeout(UpstreamError):
    status = 504
    type = "timeout_error"
    code = "upstream_timeout"


class UpstreamStatusError(UpstreamError):
    """The backend answered with an error status; 4xx bodies are relayed to the client."""

    def __init__(
        self,
        message: str,
        *,
        backend: str | None,
        upstream_status: int,
        upstream_body: bytes = b"",
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message, backend=backend, code=f"upstream_{upstream_status}")
        self.upstream_status = upstream_status
        self.upstream_body = upstream_body
        self.retry_after_s = retry_after_s
        # 5xx and 429 are the backend's trouble: another candidate may succeed.
        self.retryable = upstream_status >= 500 or upstream_status == 429
        self.status = upstream_status if 400 <= upstream_status < 500 else 502
        if upstream_status == 429:
            self.type = "rate_limit_error"

    def headers(self) -> dict[str, str]:
        if self.retry_after_s is None:
            return {}
        return {"retry-after": str(max(1, round(self.retry_after_s)))}


class NoBackendAvailable(UpstreamError):
    status = 503
    type = "service_unavailable"
    code = "no_backend_available"
    retryable = False


def error_event(error: SwitchyardError) -> bytes:
    """An SSE event that tells a streaming client the response ended in error."""
    return b"data: " + error.json_bytes() + b"\n\n"

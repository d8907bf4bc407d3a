"""The errors the provider contract promises: what an adapter raises when a backend fails.

ApiError (status, OpenAI type/code/param, message, retryable, retry_after_s)
└── UpstreamError 502 (the backend failed; `retryable` says if the next candidate may help)
    ├── UpstreamConnectError 502, UpstreamProtocolError 502
    │   └── UpstreamResponseTooLarge 502 (the answer passed the host's cap on its size)
    ├── UpstreamTimeout 504
    ├── UpstreamStatusError (the backend's 4xx, else 502; 429 and 5xx are retryable)
    │   ├── UpstreamCredentialsRefused 502 (the backend refused the gateway's own key;
    │   │   the message names the variable it came from, `KeySource`)
    │   ├── UpstreamNotFound 404 (no such path or model there: the message names the
    │   │   backend and the path asked, and asks whether its base_url is right)
    │   └── UpstreamNotReady 502 (the engine is up but not serving yet: loading its model)
    ├── UnsupportedRequest 400, MissingDeployment 400 (a request the adapter cannot send
    │   as it is: the client's error, not retried)
    └── NativeApiRequired 400 (only a backend of the client's own API may serve it: the
        next candidate may)

ApiError is also the root of the host's own errors, so one handler there catches both
trees; the host, not this package, turns them into HTTP responses. Every error an adapter
raises is one of these classes, defined here (tests/test_error_trees.py keeps it so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from providers.rate_limits import RateLimitSignal

_REASON = re.compile(r"[A-Za-z_]{1,64}")
"""What an upstream's error type or status name may look like to be quoted in a message."""


class ApiError(Exception):
    """An error that describes itself as an OpenAI-style API error."""

    status: int = 500
    type: str = "server_error"
    code: str | None = "internal_error"
    retryable: bool = False
    retry_after_s: float | None = None
    """When set, how long the client should wait before trying again."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code


class UpstreamError(ApiError):
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


class UpstreamResponseTooLarge(UpstreamProtocolError):
    """The backend's answer, whole or streamed, passed the host's cap on its size. Not
    retryable: another backend asked the same would most likely answer as much."""

    code = "upstream_response_too_large"
    retryable = False


class UpstreamTimeout(UpstreamError):
    status = 504
    type = "timeout_error"
    code = "upstream_timeout"


class UpstreamStatusError(UpstreamError):
    """The backend answered with an error status; 4xx bodies are relayed to the client.

    `rate_limit` is what the answer's headers said of the backend's limits (a 429's in
    particular), set by the HTTP layer when the adapter's mapping did not.
    """

    rate_limit: RateLimitSignal | None = None

    def __init__(
        self,
        message: str,
        *,
        backend: str | None,
        upstream_status: int,
        upstream_body: bytes = b"",
        retry_after_s: float | None = None,
        rate_limit: RateLimitSignal | None = None,
        said: str | None = None,
    ) -> None:
        super().__init__(message, backend=backend, code=f"upstream_{upstream_status}")
        self.upstream_status = upstream_status
        self.upstream_body = upstream_body
        self.said = said
        """What the backend said of the error in its API's own error shape, as the adapter
        read it (its key scrubbed out, cut short); None when it said nothing readable."""
        self.retry_after_s = retry_after_s
        self.rate_limit = rate_limit
        # 5xx and 429 are the backend's trouble: another candidate may succeed.
        self.retryable = upstream_status >= 500 or upstream_status == 429
        self.status = upstream_status if 400 <= upstream_status < 500 else 502
        if upstream_status == 429:
            self.type = "rate_limit_error"


class UpstreamNotFound(UpstreamStatusError):
    """The backend answered 404 to what it was asked: it has no such path (most often a
    `base_url` without its API's prefix, `/v1`) or no such model.

    The message names the backend and the method and path asked (never the query, a key
    or the client's body), then what the backend said of it or, when it said nothing
    readable, asks whether its base_url is right and gives its provider's own. The client
    gets that message, in the upstream's OpenAI-shaped error object when there is one (its
    type and code kept: OpenAI's `model_not_found`), else in the gateway's.

    The status stays the backend's 404, not a 502: the gateway cannot tell a path the
    backend lacks (its own misconfiguration) from a model it lacks, and OpenAI answers an
    unknown model with a 404 that clients act on (the SDKs' NotFoundError). Not retryable,
    as any 4xx: no sign that the backend is failing, and what is wrong is the same on
    every request until its config is fixed, which the message says how to find.
    """

    def __init__(
        self,
        *,
        backend: str | None,
        asked: str,
        said: str | None = None,
        provider_url: str | None = None,
        upstream_body: bytes = b"",
        retry_after_s: float | None = None,
        rate_limit: RateLimitSignal | None = None,
    ) -> None:
        message = f"backend '{backend}' answered HTTP 404 for {asked}: "
        if said:
            message += said
        else:
            message += "is its base_url right?"
            if provider_url:
                message += f" Its provider's is {provider_url}"
        super().__init__(
            message,
            backend=backend,
            upstream_status=404,
            upstream_body=_with_message(upstream_body, message),
            retry_after_s=retry_after_s,
            rate_limit=rate_limit,
            said=said,
        )

    @classmethod
    def of(
        cls, error: UpstreamStatusError, asked: str, provider_url: str | None
    ) -> UpstreamNotFound:
        """An adapter's mapping of a 404 (`error`), with what the HTTP layer knows: the
        method and path it sent (`POST /v1/messages`) and its provider's base URL."""
        return cls(
            backend=error.backend,
            asked=asked,
            said=error.said,
            provider_url=provider_url,
            upstream_body=error.upstream_body,
            retry_after_s=error.retry_after_s,
            rate_limit=error.rate_limit,
        )


def openai_error_object(body: bytes) -> dict[str, Any] | None:
    """The `error` object of an OpenAI-shaped error body; None for any other body."""
    try:
        document = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return None
    error = document.get("error") if isinstance(document, dict) else None
    return error if isinstance(error, dict) else None


def _with_message(body: bytes, message: str) -> bytes:
    """An OpenAI-shaped error body with its message replaced by `message`; empty for any
    other body (the host then answers in its own shape, `message` included)."""
    error = openai_error_object(body)
    return b"" if error is None else orjson.dumps({"error": {**error, "message": message}})


@dataclass(frozen=True, slots=True)
class KeySource:
    """Where a backend's key came from, as its refusals name it: the environment variable
    (its name, never the key; None when the host names none) and whether a key was sent."""

    env: str | None = None
    sent: bool = True

    @classmethod
    def of(cls, api_key: str | None, env: str | None) -> KeySource:
        return cls(env, bool(api_key))

    def rejected(self) -> str:
        """What the upstream rejected, in words: `upstream rejected the credentials from
        OPENAI_API_KEY`, or why no key was sent."""
        if self.sent:
            what = f"the credentials from {self.env}" if self.env else "the gateway's credentials"
            return f"upstream rejected {what}"
        why = f"{self.env} is unset or empty" if self.env else "no api_key_env is configured"
        return f"upstream rejected a request sent without credentials: {why}"


class UpstreamCredentialsRefused(UpstreamStatusError):
    """The backend refused the gateway's own credentials (its 401 or 403, or a cloud's way
    of saying so): never the client's fault, so a 502, and never the upstream body, which
    may quote the key; the message names the environment variable the key came from (or
    that none was sent), the status and the upstream's error type, nothing the upstream wrote.

    Retryable: the next candidate holds other credentials and may answer, and the failures
    this backend keeps recording are what ejects it until its key is fixed.
    """

    code = "upstream_credentials_refused"

    def __init__(
        self,
        *,
        backend: str | None,
        upstream_status: int,
        reason: str | None = None,
        key: KeySource | None = None,
    ) -> None:
        key = key or KeySource()
        label = f"HTTP {upstream_status}"
        if reason and _REASON.fullmatch(reason):
            label += f" {reason}"
        super().__init__(
            f"backend {backend}: {key.rejected()} ({label})",
            backend=backend,
            upstream_status=upstream_status,
        )
        self.key_env = key.env
        self.status = 502
        self.type = "upstream_error"
        self.code = "upstream_credentials_refused"
        self.retryable = True


class UpstreamNotReady(UpstreamStatusError):
    """The engine answered but is not ready to serve: llama-server's 503 `Loading model`,
    which every path (`/health`, `/slots`, the API) answers until the model is loaded.

    Retryable (the next candidate may be ready) but no failure of the backend: the host
    keeps it out until its probe says it is ready, without counting towards an ejection.
    """

    code = "upstream_not_ready"

    def __init__(self, reason: str, *, backend: str | None, upstream_status: int) -> None:
        super().__init__(
            f"backend {backend} is not ready: {reason} (HTTP {upstream_status})",
            backend=backend,
            upstream_status=upstream_status,
        )
        self.code = "upstream_not_ready"
        self.retryable = True
        self.reason = f"not ready: {reason} (HTTP {upstream_status})"
        """What the host shows as the backend's health reason."""


class UnsupportedRequest(UpstreamError):
    """The request asks for what the backend's API cannot do (or is malformed; Gemini's
    adapter says which): a client error that no retry at this backend can fix."""

    status = 400
    type = "invalid_request_error"
    code = "unsupported_parameter"
    retryable = False

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.param = param


class NativeApiRequired(UpstreamError):
    """The request can be served only in its client's own API (`NativeRequest.required`),
    which this backend does not speak: the next candidate may; the client's error (400)
    when none does."""

    status = 400
    type = "invalid_request_error"
    code = "native_api_required"
    retryable = True


class MissingDeployment(UpstreamError):
    """An Azure OpenAI request without a `model` names no deployment: the client's error,
    not retried."""

    status = 400
    type = "invalid_request_error"
    code = "missing_model"
    retryable = False

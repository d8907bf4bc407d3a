"""The gateway's own errors, rooted where the providers' errors are so one handler takes both.

SwitchyardError (providers.errors.ApiError: 500 internal_error)
├── ClientError (4xx: the request is wrong)
│   ├── InvalidRequest 400, Unauthorized 401, Forbidden 403, NotFound 404,
│   │   PayloadTooLarge 413
│   ├── PlacementUnsatisfiable 400
│   ├── CapacityExhausted 429
│   │   └── RouteCoolingDown 429 (every backend of a route cooling down)
│   └── RateLimited 429
└── UpstreamError (providers/errors.py: the backend failed, with its own subclasses)
    └── NoBackendAvailable 503

gateway/http/responses.py turns any of them into an OpenAI-shaped response or SSE event.

ConfigError (not a request's error: a config file or environment that cannot be used;
the CLI prints its problems, a reload keeps the running config)
"""

from __future__ import annotations

from providers.errors import ApiError, UpstreamError

SwitchyardError = ApiError
"""The gateway's name for the shared root, so `except SwitchyardError` also catches what
a provider raises."""


class ClientError(SwitchyardError):
    status = 400
    type = "invalid_request_error"
    code = "invalid_request"


class InvalidRequest(ClientError):
    pass


class PlacementUnsatisfiable(ClientError):
    """No backend the request may use carries every tag it requires: a property of the
    config, not of the fleet's state, so trying again later cannot help (hence not 503)."""

    code = "placement_unsatisfiable"


class Unauthorized(ClientError):
    status = 401
    type = "authentication_error"
    code = "invalid_api_key"


class Forbidden(ClientError):
    """A valid key that may not do this (a route it is not allowed, an admin endpoint)."""

    status = 403
    type = "permission_error"
    code = "permission_denied"


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


class RouteCoolingDown(CapacityExhausted):
    """Every backend a route may use is cooling down (its provider's 429, a spent budget)
    for longer than the request may wait: try again after `retry_after_s`."""

    code = "backends_cooling_down"


class RateLimited(ClientError):
    """A key's or a route's RPM / TPM limit: OpenAI's `rate_limit_exceeded`, its type
    naming the limit (`requests` or `tokens`), with the `x-ratelimit-*` headers."""

    status = 429
    type = "requests"
    code = "rate_limit_exceeded"

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        retry_after_s: float | None,
        headers: dict[str, str],
    ) -> None:
        super().__init__(message)
        self.type = kind
        self.retry_after_s = retry_after_s
        self.headers = headers


class NoBackendAvailable(UpstreamError):
    """No candidate is left to try; not the backends' failure, so not retryable."""

    status = 503
    type = "service_unavailable"
    code = "no_backend_available"
    retryable = False


class ConfigError(Exception):
    """A config file that cannot be used; `problems` name the YAML path of each error."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))

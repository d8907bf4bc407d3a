"""The gateway's own errors, rooted where the providers' errors are so one handler takes both.

SwitchyardError (providers.errors.ApiError: 500 internal_error)
├── ClientError 400 (4xx: the request is wrong)
│   ├── InvalidRequest 400, Unauthorized 401, Forbidden 403, NotFound 404,
│   │   RequestTimeout 408, PayloadTooLarge 413
│   ├── PlacementUnsatisfiable 400
│   ├── InvalidConfig 400 (a reload's new file does not validate)
│   ├── RestartRequired 409, NotReloading 409 (a reload that cannot be done)
│   ├── CapacityExhausted 429
│   │   ├── RouteCoolingDown 429 (every backend of a route cooling down)
│   │   └── RequestShed 429 (flow control: late, queue full or timed out, displaced)
│   ├── RateLimited 429 (a key's or route's RPM / TPM)
│   └── BudgetExhausted 429 (a key's or route's spend limit)
├── ReloadFailed 500 (a reload's new config would not start)
│   └── ReloadIncomplete 500 (some workers took a reload, others did not)
├── ShuttingDown 503 (draining: a new request refused, an open stream ended; retryable)
├── KeyStoreUnavailable 503 (the virtual keys' store cannot be read or written)
├── TooManyConnections 503 (a process's cap on client connections; retryable)
└── UpstreamError (providers/errors.py: the backend failed, with its own subclasses)
    └── NoBackendAvailable 503

gateway/http/responses.py turns any of them into an OpenAI-shaped response or SSE event.
Every subclass of SwitchyardError the gateway raises is defined here, and drawn above
(tests/test_error_trees.py keeps it so).

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


class RequestTimeout(ClientError):
    """The client did not send its request in time (`server.clients`): its head, or its
    body's next bytes. Written by the HTTP server itself, then the connection closed."""

    status = 408
    code = "request_timeout"


class PayloadTooLarge(ClientError):
    status = 413
    code = "request_too_large"


class InvalidConfig(ClientError):
    """A reload's new file does not validate; the running config stays."""

    code = "invalid_config"

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(f"{source}: " + "; ".join(problems))
        self.problems = problems


class RestartRequired(ClientError):
    """A reload's new file changes settings only a restart applies; nothing was changed."""

    status = 409
    code = "restart_required"

    def __init__(self, paths: tuple[str, ...]) -> None:
        super().__init__(
            f"{', '.join(paths)}: cannot change without a restart; nothing was reloaded"
        )
        self.paths = paths


class NotReloading(ClientError):
    """No reload: no file to reload from (a gateway built from a config object), or
    shutting down."""

    status = 409
    code = "reload_unavailable"


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


class RequestShed(CapacityExhausted):
    """Flow control refused the request: it could not start in time for its TTFT target
    (`deadline_unmeetable`), its route's queue was full (`queue_full`), it was held the
    longest a request may be (`queue_timeout`), or a higher class took its place
    (`request_shed`). Try again after `retry_after_s`."""

    code = "request_shed"

    def __init__(self, message: str, *, code: str, retry_after_s: float) -> None:
        super().__init__(message, retry_after_s=retry_after_s)
        self.code = code


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


class BudgetExhausted(ClientError):
    """A key's or a route's spend limit is reached: OpenAI's `insufficient_quota` type,
    with Retry-After until the window ends and the budget headers."""

    status = 429
    type = "insufficient_quota"
    code = "budget_exceeded"

    def __init__(self, message: str, *, retry_after_s: float, headers: dict[str, str]) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.headers = headers


class ReloadFailed(SwitchyardError):
    """A reload's new config validated but a part of it would not start; nothing was
    changed. With several workers: no worker took it, and `workers` says why each refused."""

    code = "reload_failed"

    def __init__(self, message: str, *, workers: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.workers = workers
        """With several workers: `{"took": n, "refused": [{"pid", "code", "error"}, ...]}`."""


class ReloadIncomplete(ReloadFailed):
    """Some workers took a reload's new config and others did not (`workers` says which and
    why): until a reload they all take, they serve different configs."""

    code = "reload_incomplete"


class ShuttingDown(SwitchyardError):
    """The gateway is shutting down: a new request is refused, an open stream ended."""

    status = 503
    type = "service_unavailable"
    code = "gateway_shutting_down"
    retryable = True


class KeyStoreUnavailable(SwitchyardError):
    """The virtual keys' store cannot be read or written: the admin API's 503."""

    status = 503
    type = "service_unavailable"
    code = "key_store_unavailable"


class TooManyConnections(SwitchyardError):
    """The process holds `server.clients.max_connections` client connections already: a new
    one is answered this and closed at once."""

    status = 503
    type = "service_unavailable"
    code = "too_many_connections"
    retryable = True
    retry_after_s = 1.0


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

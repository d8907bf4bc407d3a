"""The gateway's error tree: each class's place, status, OpenAI type and code, and
retryability, which clients see in the OpenAI-shaped body (tests/gateway/http/test_errors.py
shows the bodies)."""

from __future__ import annotations

import pytest

from gateway.errors import (
    BudgetExhausted,
    CapacityExhausted,
    ClientError,
    Forbidden,
    InvalidConfig,
    InvalidRequest,
    KeyStoreUnavailable,
    NoBackendAvailable,
    NotFound,
    NotReloading,
    PayloadTooLarge,
    PlacementUnsatisfiable,
    RateLimited,
    ReloadFailed,
    ReloadIncomplete,
    RestartRequired,
    RouteCoolingDown,
    ShuttingDown,
    SwitchyardError,
    Unauthorized,
)
from providers.errors import ApiError, UpstreamError


@pytest.mark.parametrize(
    ("error", "parent", "status", "type_", "code", "retryable"),
    [
        (InvalidRequest("x"), ClientError, 400, "invalid_request_error", "invalid_request", False),
        (
            PlacementUnsatisfiable("x"),
            ClientError,
            400,
            "invalid_request_error",
            "placement_unsatisfiable",
            False,
        ),
        (Unauthorized("x"), ClientError, 401, "authentication_error", "invalid_api_key", False),
        (Forbidden("x"), ClientError, 403, "permission_error", "permission_denied", False),
        (NotFound("x"), ClientError, 404, "invalid_request_error", "model_not_found", False),
        (
            PayloadTooLarge("x"),
            ClientError,
            413,
            "invalid_request_error",
            "request_too_large",
            False,
        ),
        (
            InvalidConfig("c.yaml", ["a: b"]),
            ClientError,
            400,
            "invalid_request_error",
            "invalid_config",
            False,
        ),
        (
            RestartRequired(("server.port",)),
            ClientError,
            409,
            "invalid_request_error",
            "restart_required",
            False,
        ),
        (
            NotReloading("x"),
            ClientError,
            409,
            "invalid_request_error",
            "reload_unavailable",
            False,
        ),
        (
            CapacityExhausted("x"),
            ClientError,
            429,
            "rate_limit_error",
            "capacity_exhausted",
            False,
        ),
        (
            RouteCoolingDown("x"),
            CapacityExhausted,
            429,
            "rate_limit_error",
            "backends_cooling_down",
            False,
        ),
        (
            RateLimited("x", kind="tokens", retry_after_s=1.0, headers={}),
            ClientError,
            429,
            "tokens",
            "rate_limit_exceeded",
            False,
        ),
        (
            BudgetExhausted("x", retry_after_s=60.0, headers={}),
            ClientError,
            429,
            "insufficient_quota",
            "budget_exceeded",
            False,
        ),
        (ReloadFailed("x"), ApiError, 500, "server_error", "reload_failed", False),
        (ReloadIncomplete("x"), ReloadFailed, 500, "server_error", "reload_incomplete", False),
        (
            ShuttingDown("x"),
            ApiError,
            503,
            "service_unavailable",
            "gateway_shutting_down",
            True,
        ),
        (
            KeyStoreUnavailable("x"),
            ApiError,
            503,
            "service_unavailable",
            "key_store_unavailable",
            False,
        ),
        (
            NoBackendAvailable("x"),
            UpstreamError,
            503,
            "service_unavailable",
            "no_backend_available",
            False,
        ),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else None,
)
def test_each_class_describes_itself(
    error: SwitchyardError,
    parent: type[ApiError],
    status: int,
    type_: str,
    code: str,
    retryable: bool,
) -> None:
    assert type(error).__bases__ == (parent,)
    assert (error.status, error.type, error.code, error.retryable) == (
        status,
        type_,
        code,
        retryable,
    )


def test_the_gateways_root_is_the_providers() -> None:
    assert SwitchyardError is ApiError

"""The one mapping of both error trees to OpenAI-shaped bodies, headers and SSE events."""

from __future__ import annotations

import orjson
import pytest

from gateway.errors import (
    CapacityExhausted,
    ClientError,
    InvalidRequest,
    NoBackendAvailable,
    NotFound,
    PayloadTooLarge,
    SwitchyardError,
    Unauthorized,
)
from gateway.http.responses import error_bytes, error_event, error_headers, error_response
from providers.errors import (
    ApiError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamStatusError,
    UpstreamTimeout,
)


def status_error(
    status: int, *, upstream_body: bytes = b"", retry_after_s: float | None = None
) -> UpstreamStatusError:
    return UpstreamStatusError(
        "s",
        backend="a",
        upstream_status=status,
        upstream_body=upstream_body,
        retry_after_s=retry_after_s,
    )


@pytest.mark.parametrize(
    ("error", "status", "type_", "code", "headers"),
    [
        (SwitchyardError("bug"), 500, "server_error", "internal_error", {}),
        (
            ClientError("c", code="method_not_allowed"),
            400,
            "invalid_request_error",
            "method_not_allowed",
            {},
        ),
        (InvalidRequest("i", param="n"), 400, "invalid_request_error", "invalid_request", {}),
        (Unauthorized("u"), 401, "authentication_error", "invalid_api_key", {}),
        (NotFound("n", param="model"), 404, "invalid_request_error", "model_not_found", {}),
        (PayloadTooLarge("p"), 413, "invalid_request_error", "request_too_large", {}),
        (
            CapacityExhausted("full"),
            429,
            "rate_limit_error",
            "capacity_exhausted",
            {"retry-after": "1"},
        ),
        (
            CapacityExhausted("full", retry_after_s=2.6),
            429,
            "rate_limit_error",
            "capacity_exhausted",
            {"retry-after": "3"},
        ),
        (NoBackendAvailable("none"), 503, "service_unavailable", "no_backend_available", {}),
        (UpstreamError("u", backend="a"), 502, "upstream_error", "bad_gateway", {}),
        (
            UpstreamConnectError("c", backend="a"),
            502,
            "upstream_error",
            "upstream_connect_error",
            {},
        ),
        (
            UpstreamProtocolError("p", backend="a"),
            502,
            "upstream_error",
            "upstream_protocol_error",
            {},
        ),
        (UpstreamTimeout("t", backend="a"), 504, "timeout_error", "upstream_timeout", {}),
        (
            status_error(429, retry_after_s=0.2),
            429,
            "rate_limit_error",
            "upstream_429",
            {"retry-after": "1"},
        ),
        (status_error(503), 502, "upstream_error", "upstream_503", {}),
    ],
)
def test_every_error_maps_to_its_openai_shape(
    error: ApiError, status: int, type_: str, code: str, headers: dict[str, str]
) -> None:
    body = {"message": error.message, "type": type_, "param": error.param, "code": code}
    assert error_bytes(error) == orjson.dumps({"error": body})
    assert error_headers(error) == headers
    assert error_event(error) == b"data: " + orjson.dumps({"error": body}) + b"\n\n"
    response = error_response(error, {"allow": "POST"})
    assert response.status_code == status
    assert response.body == error_bytes(error)
    assert response.headers["content-type"] == "application/json"
    assert response.headers["allow"] == "POST"
    assert response.headers.get("retry-after") == headers.get("retry-after")


def test_the_exact_bytes_clients_see() -> None:
    assert error_bytes(UpstreamTimeout("backend a timed out (response)", backend="a")) == (
        b'{"error":{"message":"backend a timed out (response)","type":"timeout_error",'
        b'"param":null,"code":"upstream_timeout"}}'
    )


def test_a_backends_own_4xx_body_is_relayed() -> None:
    error = status_error(400, upstream_body=b'{"error":"context too long"}')
    response = error_response(error)
    assert (response.status_code, response.body) == (400, b'{"error":"context too long"}')


def test_upstream_errors_are_caught_as_the_gateways_errors() -> None:
    with pytest.raises(SwitchyardError):
        raise UpstreamTimeout("t", backend="a")
    assert isinstance(NoBackendAvailable("n"), UpstreamError)

"""The gateway's error tree in Anthropic's shape: status kept, Anthropic's type per status."""

from __future__ import annotations

import orjson
import pytest

from gateway.errors import (
    CapacityExhausted,
    InvalidRequest,
    NoBackendAvailable,
    NotFound,
    PayloadTooLarge,
    SwitchyardError,
    Unauthorized,
)
from gateway.http.anthropic_ingress.errors import error_event, error_response, error_type
from providers.errors import (
    ApiError,
    UpstreamConnectError,
    UpstreamStatusError,
    UpstreamTimeout,
)


def status_error(status: int, body: bytes = b"") -> UpstreamStatusError:
    return UpstreamStatusError(
        "backend said no", backend="b", upstream_status=status, upstream_body=body
    )


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (InvalidRequest("bad"), 400, "invalid_request_error"),
        (Unauthorized("who"), 401, "authentication_error"),
        (NotFound("no route"), 404, "not_found_error"),
        (PayloadTooLarge("big"), 413, "request_too_large"),
        (CapacityExhausted("full"), 429, "rate_limit_error"),
        (SwitchyardError("bug"), 500, "api_error"),
        (UpstreamConnectError("down"), 502, "api_error"),
        (NoBackendAvailable("none left"), 503, "overloaded_error"),
        (UpstreamTimeout("slow"), 504, "api_error"),
        (status_error(500), 502, "api_error"),
        (status_error(429), 429, "rate_limit_error"),
        (status_error(403, b'{"error": {"message": "not for you"}}'), 403, "permission_error"),
        (status_error(422, b"{}"), 422, "invalid_request_error"),
    ],
)
def test_status_and_type(error: ApiError, status: int, kind: str) -> None:
    response = error_response(error)
    assert response.status_code == status
    assert response.media_type == "application/json"
    body = orjson.loads(bytes(response.body))
    assert body == {"type": "error", "error": {"type": kind, "message": body["error"]["message"]}}
    assert body["error"]["message"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b'{"error": {"message": "context too long", "type": "invalid_request_error"}}',
            "context too long",
        ),
        (b'{"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}', "bad"),
        (b'{"detail": "unprocessable"}', "unprocessable"),
        (b'{"object": "error", "message": "vllm says"}', "vllm says"),
        (b"<html>oops</html>", "backend said no"),
    ],
)
def test_backend_4xx_message_is_passed_on(body: bytes, message: str) -> None:
    response = error_response(status_error(400, body))
    assert response.status_code == 400
    assert orjson.loads(bytes(response.body))["error"]["message"] == message


def test_retry_after_is_kept() -> None:
    response = error_response(CapacityExhausted("full", retry_after_s=2.4))
    assert response.headers["retry-after"] == "2"


def test_error_event() -> None:
    raw = error_event(UpstreamConnectError("broke"))
    kind, data = raw.split(b"\n", 1)
    assert kind == b"event: error" and raw.endswith(b"\n\n")
    assert orjson.loads(data.removeprefix(b"data: ")) == {
        "type": "error",
        "error": {"type": "api_error", "message": "broke"},
    }


@pytest.mark.parametrize(
    ("status", "kind"),
    [(405, "invalid_request_error"), (529, "overloaded_error"), (501, "api_error")],
)
def test_other_statuses(status: int, kind: str) -> None:
    assert error_type(status) == kind

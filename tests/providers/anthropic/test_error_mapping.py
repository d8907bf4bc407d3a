"""Anthropic failures -> the providers' error tree: status, type/code, retryable, Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import aiohttp
import orjson
import pytest

from providers.anthropic.error_mapping import ErrorMapper, retry_after_s
from providers.anthropic.messages_wire import ErrorDetail
from providers.errors import (
    UpstreamError,
    UpstreamProtocolError,
    UpstreamTimeout,
)

KEY = "sk-ant-api03-SECRET"
MAPPER = ErrorMapper("claude-a", KEY)


def anthropic_error(error_type: str, message: str) -> bytes:
    return orjson.dumps({"type": "error", "error": {"type": error_type, "message": message}})


@pytest.mark.parametrize(
    ("status", "error_type", "client_status", "retryable", "relayed_type"),
    [
        (400, "invalid_request_error", 400, False, "invalid_request_error"),
        (404, "not_found_error", 404, False, "not_found_error"),
        (413, "request_too_large", 413, False, "request_too_large"),
        (429, "rate_limit_error", 429, True, "rate_limit_error"),
        (500, "api_error", 502, True, None),
        (529, "overloaded_error", 502, True, None),
        (401, "authentication_error", 502, False, None),
        (403, "permission_error", 502, False, None),
    ],
)
def test_http_errors(
    status: int, error_type: str, client_status: int, retryable: bool, relayed_type: str | None
) -> None:
    error = MAPPER.status_error(status, anthropic_error(error_type, "went wrong"), None)
    assert (error.upstream_status, error.status, error.retryable) == (
        status,
        client_status,
        retryable,
    )
    assert error.code == f"upstream_{status}"
    assert error.backend == "claude-a"
    assert error_type in error.message
    if relayed_type is None:
        assert error.upstream_body == b"", "5xx and refused credentials are not relayed"
    else:
        relayed = orjson.loads(error.upstream_body)["error"]
        assert relayed == {
            "message": "went wrong",
            "type": relayed_type,
            "param": None,
            "code": error_type,
        }


def test_429_honours_retry_after() -> None:
    error = MAPPER.status_error(429, anthropic_error("rate_limit_error", "slow down"), "7")
    assert error.retry_after_s == 7.0
    assert error.type == "rate_limit_error"


def test_the_key_never_leaks_from_a_refusal() -> None:
    body = anthropic_error("authentication_error", f"invalid x-api-key {KEY}")
    error = MAPPER.status_error(401, body, None)
    assert KEY not in error.message
    assert KEY not in repr(error) and KEY.encode() not in error.upstream_body
    assert "refused the gateway's credentials" in error.message


def test_the_key_is_scrubbed_from_relayed_messages() -> None:
    error = MAPPER.status_error(400, anthropic_error("invalid_request_error", f"bad {KEY}"), None)
    assert KEY not in error.message
    assert KEY.encode() not in error.upstream_body
    assert b"[redacted]" in error.upstream_body


def test_a_body_that_is_not_anthropics_names_the_status() -> None:
    error = MAPPER.status_error(503, b"<html>bad gateway</html>", None)
    assert (error.status, error.retryable) == (502, True)
    assert "HTTP 503" in error.message


@pytest.mark.parametrize(
    ("error_type", "upstream_status", "retryable"),
    [
        ("overloaded_error", 529, True),
        ("api_error", 500, True),
        ("rate_limit_error", 429, True),
        ("invalid_request_error", 400, False),
        ("an_unknown_error", 500, True),
    ],
)
def test_error_events_take_the_status_of_their_type(
    error_type: str, upstream_status: int, retryable: bool
) -> None:
    error = MAPPER.stream_error(ErrorDetail(type=error_type, message="m"))
    assert (error.upstream_status, error.retryable) == (upstream_status, retryable)
    assert error.upstream_body == b""


def test_an_untranslatable_request_is_a_400_in_openai_shape() -> None:
    error = MAPPER.invalid_request("n must be 1", param="n")
    assert (error.status, error.retryable) == (400, False)
    assert orjson.loads(error.upstream_body)["error"] == {
        "message": "n must be 1",
        "type": "invalid_request_error",
        "param": "n",
        "code": "unsupported_by_backend",
    }


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (TimeoutError(), UpstreamTimeout),
        (aiohttp.ServerTimeoutError(), UpstreamTimeout),
        (aiohttp.ServerDisconnectedError(), UpstreamProtocolError),
        (ConnectionResetError(), UpstreamProtocolError),
    ],
)
def test_transport_failures(raised: Exception, expected: type[UpstreamError]) -> None:
    """Refused connections are exercised for real in test_provider.py."""
    with pytest.raises(expected) as caught, MAPPER.map_upstream_errors():
        raise raised
    assert caught.value.retryable
    assert caught.value.backend == "claude-a"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("", None), ("3", 3.0), ("-2", 0.0), ("soon", None)],
)
def test_retry_after_values(value: str | None, expected: float | None) -> None:
    assert retry_after_s(value) == expected


def test_retry_after_as_an_http_date() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = retry_after_s(later)
    assert seconds is not None and 25 < seconds <= 30

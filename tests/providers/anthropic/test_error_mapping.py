"""Anthropic failures -> the providers' error tree: status, type/code, retryable, Retry-After.

Transport failures and Retry-After parsing are the HTTP layer's: test_http_transport.py.
"""

from __future__ import annotations

import orjson
import pytest

from providers.anthropic.error_mapping import ErrorMapper
from providers.anthropic.messages_wire import ErrorDetail
from providers.errors import UpstreamCredentialsRefused

KEY = "sk-ant-api03-SECRET"
MAPPER = ErrorMapper("claude-a", KEY, "ANTHROPIC_API_KEY")


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
        assert error.upstream_body == b"", "5xx are not relayed"
    else:
        relayed = orjson.loads(error.upstream_body)["error"]
        assert relayed == {
            "message": "went wrong",
            "type": relayed_type,
            "param": None,
            "code": error_type,
        }


def test_429_honours_retry_after() -> None:
    error = MAPPER.status_error(429, anthropic_error("rate_limit_error", "slow down"), 7.0)
    assert error.retry_after_s == 7.0
    assert error.type == "rate_limit_error"


@pytest.mark.parametrize(
    ("status", "error_type"), [(401, "authentication_error"), (403, "permission_error")]
)
def test_refused_credentials_are_a_retryable_502_without_the_key(
    status: int, error_type: str
) -> None:
    body = anthropic_error(error_type, f"invalid x-api-key {KEY}")
    from_status = MAPPER.status_error(status, body, None)
    from_event = MAPPER.stream_error(ErrorDetail(type=error_type, message=f"bad {KEY}"))
    for error in (from_status, from_event):
        assert isinstance(error, UpstreamCredentialsRefused)
        assert (error.status, error.code, error.retryable) == (
            502,
            "upstream_credentials_refused",
            True,
        )
        assert (error.upstream_status, error.upstream_body) == (status, b"")
        assert error.message == (
            "backend claude-a: upstream rejected the credentials from ANTHROPIC_API_KEY "
            f"(HTTP {status} {error_type})"
        )
        assert KEY not in repr(error)


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

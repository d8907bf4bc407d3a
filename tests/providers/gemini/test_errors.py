"""Gemini's error statuses and bodies mapped to the provider error tree, keys kept out."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.errors import UpstreamCredentialsRefused, UpstreamStatusError
from providers.gemini.errors import GeminiErrors

KEY = "AIzaSy-secret-key-123"
RETRY_INFO = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12.5s"}
BAD_KEY_INFO = {
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    "reason": "API_KEY_INVALID",
    "domain": "googleapis.com",
}


def gemini_error(code: int, status: str, message: str, *details: dict[str, Any]) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return orjson.dumps({"error": error})


def mapped(status: int, body: bytes, retry_after_s: float | None = None) -> UpstreamStatusError:
    error = GeminiErrors("gem", KEY, "GEMINI_API_KEY").for_status(status, body, retry_after_s)
    assert isinstance(error, UpstreamStatusError)
    return error


@pytest.mark.parametrize(
    ("http", "status_name", "status", "type_", "retryable"),
    [
        (400, "INVALID_ARGUMENT", 400, "upstream_error", False),
        (400, "FAILED_PRECONDITION", 400, "upstream_error", False),
        (404, "NOT_FOUND", 404, "upstream_error", False),
        (429, "RESOURCE_EXHAUSTED", 429, "rate_limit_error", True),
        (500, "INTERNAL", 502, "upstream_error", True),
        (503, "UNAVAILABLE", 502, "upstream_error", True),
        (504, "DEADLINE_EXCEEDED", 502, "upstream_error", True),
    ],
)
def test_statuses(http: int, status_name: str, status: int, type_: str, retryable: bool) -> None:
    error = mapped(http, gemini_error(http, status_name, "why"))
    assert (error.status, error.type, error.retryable) == (status, type_, retryable)
    assert error.backend == "gem"
    assert f"HTTP {http} {status_name}: why" in error.message


def test_a_4xx_body_is_relayed_in_openai_shape() -> None:
    error = mapped(400, gemini_error(400, "INVALID_ARGUMENT", "contents is empty"))
    assert orjson.loads(error.upstream_body) == {
        "error": {
            "message": "contents is empty",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_argument",
        }
    }


@pytest.mark.parametrize(
    ("details", "header_s", "expected_s"),
    [
        ((RETRY_INFO,), None, 12.5),
        ((RETRY_INFO,), 3.0, 3.0),
        ((), None, None),
        (
            ({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "soon"},),
            None,
            None,
        ),
    ],
    ids=["retry-info", "retry-after-header-wins", "neither", "unreadable-delay"],
)
def test_rate_limits_say_when_to_retry(
    details: tuple[dict[str, Any], ...], header_s: float | None, expected_s: float | None
) -> None:
    body = gemini_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded", *details)
    error = mapped(429, body, header_s)
    assert (error.status, error.retryable, error.retry_after_s) == (429, True, expected_s)
    assert orjson.loads(error.upstream_body)["error"]["type"] == "rate_limit_error"


@pytest.mark.parametrize(
    ("http", "body"),
    [
        (403, gemini_error(403, "PERMISSION_DENIED", f"Key {KEY} may not call this")),
        (401, gemini_error(401, "UNAUTHENTICATED", f"bad key {KEY}")),
        (400, gemini_error(400, "INVALID_ARGUMENT", f"API key not valid: {KEY}", BAD_KEY_INFO)),
    ],
    ids=["permission-denied", "unauthenticated", "invalid-key-as-400"],
)
def test_refused_credentials_are_a_retryable_502_without_the_key(http: int, body: bytes) -> None:
    error = mapped(http, body)
    assert isinstance(error, UpstreamCredentialsRefused)
    assert (error.status, error.retryable, error.upstream_body) == (502, True, b"")
    assert (error.code, error.upstream_status) == ("upstream_credentials_refused", http)
    assert "upstream rejected the credentials from GEMINI_API_KEY" in error.message
    for text in (error.message, str(error), repr(error), repr(error.args)):
        assert KEY not in text


def test_the_key_is_scrubbed_from_any_message_relayed() -> None:
    error = mapped(400, gemini_error(400, "INVALID_ARGUMENT", f"echo {KEY} back"))
    assert KEY.encode() not in error.upstream_body
    assert KEY not in error.message
    assert b"[redacted]" in error.upstream_body


@pytest.mark.parametrize(
    "body",
    [b"<html>Bad Gateway</html>", b"", b"[]", orjson.dumps([{"error": {"code": 503}}])],
    ids=["html", "empty", "empty-list", "list-wrapped"],
)
def test_bodies_that_say_little_still_map_by_status(body: bytes) -> None:
    error = mapped(503, body)
    assert (error.status, error.retryable, error.upstream_status) == (502, True, 503)


def test_stream_events_map_by_their_code_or_status_name() -> None:
    errors = GeminiErrors("gem", KEY)
    by_name = errors.for_stream_event({"status": "RESOURCE_EXHAUSTED", "details": [RETRY_INFO]})
    assert isinstance(by_name, UpstreamStatusError)
    assert (by_name.status, by_name.retry_after_s) == (429, 12.5)
    unknown = errors.for_stream_event("garbage")
    assert (unknown.status, unknown.retryable) == (502, True)
    refused = errors.for_stream_event({"code": 401, "status": "UNAUTHENTICATED"})
    assert isinstance(refused, UpstreamCredentialsRefused)
    assert (refused.status, refused.retryable) == (502, True)

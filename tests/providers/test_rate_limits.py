"""Rate-limit headers read into one signal: each family's names and formats, and every
malformed value ignored rather than raised."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from multidict import CIMultiDict

from providers.rate_limits import RateLimitSignal, rate_limit_signal, reset_s, retry_after_s

NOW = datetime(2025, 8, 21, 12, 40, 0, tzinfo=UTC).timestamp()


def at(seconds_from_now: float) -> str:
    """An RFC 3339 time, as Anthropic writes its resets."""
    moment = datetime.fromtimestamp(NOW + seconds_from_now, UTC)
    return moment.isoformat().replace("+00:00", "Z")


def http_date(seconds_from_now: float) -> str:
    return format_datetime(datetime.fromtimestamp(NOW + seconds_from_now, UTC), usegmt=True)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (
            {
                "x-ratelimit-limit-requests": "500",
                "x-ratelimit-remaining-requests": "499",
                "x-ratelimit-remaining-tokens": "29784",
                "x-ratelimit-reset-requests": "120ms",
                "x-ratelimit-reset-tokens": "6m0s",
            },
            RateLimitSignal(
                remaining_requests=499,
                remaining_tokens=29784,
                requests_reset_s=0.12,
                tokens_reset_s=360.0,
            ),
        ),
        (
            # Groq writes fractions of seconds inside its durations.
            {"x-ratelimit-reset-requests": "2m59.56s", "x-ratelimit-reset-tokens": "1h1s"},
            RateLimitSignal(requests_reset_s=179.56, tokens_reset_s=3601.0),
        ),
        (
            {
                "anthropic-ratelimit-requests-remaining": "999",
                "anthropic-ratelimit-requests-reset": at(59),
                "anthropic-ratelimit-tokens-remaining": "96000",
                "anthropic-ratelimit-tokens-reset": at(1),
                "anthropic-ratelimit-input-tokens-remaining": "80000",
                "anthropic-ratelimit-output-tokens-remaining": "16000",
            },
            RateLimitSignal(
                remaining_requests=999,
                remaining_tokens=96000,
                remaining_input_tokens=80000,
                remaining_output_tokens=16000,
                requests_reset_s=59.0,
                tokens_reset_s=1.0,
            ),
        ),
        (
            # Only the input budget's reset given: it stands for the tokens' reset.
            {"anthropic-ratelimit-input-tokens-reset": at(30)},
            RateLimitSignal(tokens_reset_s=30.0),
        ),
        (
            # A reset already past is a budget already full again.
            {"anthropic-ratelimit-requests-reset": at(-5)},
            RateLimitSignal(requests_reset_s=0.0),
        ),
        (
            # Together: unsuffixed names, counting requests, the reset in seconds.
            {"x-ratelimit-remaining": "7", "x-ratelimit-reset": "2"},
            RateLimitSignal(remaining_requests=7, requests_reset_s=2.0),
        ),
        (
            # OpenRouter: the reset as a Unix time in milliseconds.
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int((NOW + 42) * 1000))},
            RateLimitSignal(remaining_requests=0, requests_reset_s=42.0),
        ),
        (
            {"x-ratelimit-reset": str(int(NOW + 10))},
            RateLimitSignal(requests_reset_s=10.0),
        ),
        ({"retry-after": "7"}, RateLimitSignal(retry_after_s=7.0)),
        ({"retry-after": http_date(30)}, RateLimitSignal(retry_after_s=30.0)),
        ({"retry-after-ms": "1500", "retry-after": "9"}, RateLimitSignal(retry_after_s=1.5)),
        ({"retry-after-ms": "0", "retry-after": "9"}, RateLimitSignal(retry_after_s=0.0)),
        (
            # The suffixed OpenAI name wins over the unsuffixed one.
            {"x-ratelimit-remaining-requests": "3", "x-ratelimit-remaining": "9"},
            RateLimitSignal(remaining_requests=3),
        ),
    ],
    ids=[
        "openai",
        "groq-fractions-and-hours",
        "anthropic",
        "anthropic-input-reset",
        "reset-in-the-past",
        "together",
        "openrouter-unix-ms",
        "unix-seconds",
        "retry-after-seconds",
        "retry-after-http-date",
        "retry-after-ms-first",
        "retry-after-ms-zero",
        "suffixed-first",
    ],
)
def test_each_family_reads_into_one_signal(
    headers: dict[str, str], expected: RateLimitSignal
) -> None:
    assert rate_limit_signal(headers, now=NOW) == expected


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"content-type": "application/json", "x-request-id": "abc"},
        {"x-ratelimit-remaining-requests": "-1"},
        {"x-ratelimit-remaining-requests": "12.5"},
        {"x-ratelimit-remaining-requests": "²"},
        {"x-ratelimit-remaining-tokens": ""},
        {"anthropic-ratelimit-tokens-remaining": "lots"},
        {"x-ratelimit-reset-requests": "soon"},
        {"x-ratelimit-reset-requests": "-1s"},
        {"x-ratelimit-reset-requests": "6m0"},
        {"x-ratelimit-reset-tokens": "nan"},
        {"x-ratelimit-reset-tokens": "inf"},
        {"anthropic-ratelimit-requests-reset": "2025-08-21T12:40:59"},
        {"anthropic-ratelimit-requests-reset": "2025-13-45T99:00:00Z"},
        {"retry-after": "soon"},
        {"retry-after": "inf"},
        {"retry-after": "Mon, 99 Foo 2025 25:61:61 GMT"},
        {"retry-after-ms": "-5"},
    ],
    ids=lambda headers: ",".join(f"{k}={v}" for k, v in headers.items()) or "none",
)
def test_nothing_readable_is_no_signal(headers: dict[str, str]) -> None:
    assert rate_limit_signal(headers, now=NOW) is None


def test_a_malformed_header_leaves_the_rest_readable() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "many",
        "x-ratelimit-remaining-tokens": "100",
        "x-ratelimit-reset-tokens": "?",
        "retry-after": "2",
    }
    assert rate_limit_signal(headers, now=NOW) == RateLimitSignal(
        remaining_tokens=100, retry_after_s=2.0
    )


def test_aiohttp_headers_match_in_any_case() -> None:
    headers = CIMultiDict({"X-RateLimit-Remaining-Requests": "5", "Retry-After": "1"})
    assert rate_limit_signal(headers, now=NOW) == RateLimitSignal(
        remaining_requests=5, retry_after_s=1.0
    )


@pytest.mark.parametrize(
    ("signal", "wait_s"),
    [
        (RateLimitSignal(), None),
        (RateLimitSignal(retry_after_s=3.0, remaining_requests=0, requests_reset_s=9.0), 3.0),
        (RateLimitSignal(remaining_requests=0, requests_reset_s=9.0), 9.0),
        (RateLimitSignal(remaining_requests=4, requests_reset_s=9.0), None),
        (
            RateLimitSignal(
                remaining_requests=0,
                requests_reset_s=2.0,
                remaining_tokens=0,
                tokens_reset_s=30.0,
            ),
            30.0,
        ),
        (RateLimitSignal(remaining_tokens=0), None),
    ],
    ids=["nothing", "retry-after-first", "spent-requests", "left", "both-spent", "no-reset"],
)
def test_wait_is_retry_after_else_the_reset_of_a_spent_budget(
    signal: RateLimitSignal, wait_s: float | None
) -> None:
    assert signal.wait_s == wait_s


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1s", 1.0), ("20ms", 0.02), ("6m0s", 360.0), ("1h2m3s", 3723.0), ("1500us", 0.0015)],
)
def test_go_durations(value: str, seconds: float) -> None:
    assert reset_s(value, now=NOW) == pytest.approx(seconds)


def test_retry_after_without_a_clock_counts_from_now() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = retry_after_s(later)
    assert seconds is not None and 25 < seconds <= 30

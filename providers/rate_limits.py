"""A backend's rate-limit headers read into one `RateLimitSignal`: what is left of its
request and token budgets, when each fills again, and how long it asked to be left alone.

Every answer is read, whole, streamed or refused: OpenAI's `x-ratelimit-*` (Azure, Groq and
most OpenAI-compatible clouds use its names), the unsuffixed `x-ratelimit-remaining` and
`-reset` of Together and OpenRouter, Anthropic's `anthropic-ratelimit-*`, and
`Retry-After` (with OpenAI's `retry-after-ms`). A value that cannot be read is ignored: a
signal is advice, and a malformed header must never fail the answer it came with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import partial
from time import time
from types import MappingProxyType
from typing import TypeVar

T = TypeVar("T")

# Each field's headers, in order of preference: the first one readable wins.
REMAINING_REQUESTS = (
    "x-ratelimit-remaining-requests",
    "anthropic-ratelimit-requests-remaining",
    "x-ratelimit-remaining",
)
REMAINING_TOKENS = ("x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining")
REMAINING_INPUT_TOKENS = ("anthropic-ratelimit-input-tokens-remaining",)
REMAINING_OUTPUT_TOKENS = ("anthropic-ratelimit-output-tokens-remaining",)
REQUESTS_RESET = (
    "x-ratelimit-reset-requests",
    "anthropic-ratelimit-requests-reset",
    "x-ratelimit-reset",
)
TOKENS_RESET = (
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
)
RETRY_AFTER_MS = "retry-after-ms"
RETRY_AFTER = "retry-after"

_ALL_HEADERS = frozenset(
    {
        *REMAINING_REQUESTS,
        *REMAINING_TOKENS,
        *REMAINING_INPUT_TOKENS,
        *REMAINING_OUTPUT_TOKENS,
        *REQUESTS_RESET,
        *TOKENS_RESET,
        RETRY_AFTER_MS,
        RETRY_AFTER,
    }
)
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|us|µs|ns|h|m|s))+")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
_SECONDS_PER_UNIT: Mapping[str, float] = MappingProxyType(
    {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
)
_UNIX_TIME_FROM = 1e9
"""A bare number this large is a Unix time (September 2001 on), not a wait: OpenRouter's
`x-ratelimit-reset` is one, in milliseconds."""
_UNIX_MS_FROM = 1e12


@dataclass(frozen=True, slots=True)
class RateLimitSignal:
    """What one answer said of the backend's limits; None where it said nothing readable."""

    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    """Tokens left under the binding token limit (Anthropic's is the most restrictive in
    effect); the input and output budgets, where given apart, follow."""
    remaining_input_tokens: int | None = None
    remaining_output_tokens: int | None = None
    requests_reset_s: float | None = None
    """Seconds until the request budget is full again."""
    tokens_reset_s: float | None = None
    """Seconds until the token budget is full again."""
    retry_after_s: float | None = None
    """Seconds the backend asked the caller to wait before trying again."""

    @property
    def wait_s(self) -> float | None:
        """How long the backend should be left alone: its Retry-After, else the reset of a
        budget it reports spent; None when it asked for no wait."""
        if self.retry_after_s is not None:
            return self.retry_after_s
        spent = [
            reset
            for left, reset in (
                (self.remaining_requests, self.requests_reset_s),
                (self.remaining_tokens, self.tokens_reset_s),
            )
            if left == 0 and reset is not None
        ]
        return max(spent) if spent else None


_NOTHING = RateLimitSignal()


def rate_limit_signal(
    headers: Mapping[str, str], *, now: float | None = None
) -> RateLimitSignal | None:
    """The signal in `headers`, or None when they carry nothing readable; never raises.

    Names are looked up in lower case: aiohttp's headers are case-insensitive, a plain
    mapping must use lower-case names. `now` (Unix seconds) is for reading reset times.
    """
    if type(headers) is dict:  # the lean client's plain dict (lower-case names)
        if _ALL_HEADERS.isdisjoint(headers):  # one C-level pass over its few names
            return None
    elif not any(name in headers for name in _ALL_HEADERS):
        return None
    seconds = partial(reset_s, now=time() if now is None else now)
    signal = RateLimitSignal(
        remaining_requests=_first(headers, REMAINING_REQUESTS, _count),
        remaining_tokens=_first(headers, REMAINING_TOKENS, _count),
        remaining_input_tokens=_first(headers, REMAINING_INPUT_TOKENS, _count),
        remaining_output_tokens=_first(headers, REMAINING_OUTPUT_TOKENS, _count),
        requests_reset_s=_first(headers, REQUESTS_RESET, seconds),
        tokens_reset_s=_first(headers, TOKENS_RESET, seconds),
        retry_after_s=_retry_after(headers, now),
    )
    return None if signal == _NOTHING else signal


def retry_after_s(value: str | None, *, now: float | None = None) -> float | None:
    """`Retry-After` in seconds: a number, or an HTTP date from now; None if absent or bad."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return _until(_http_date(value), time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


def reset_s(value: str, *, now: float) -> float | None:
    """When a budget fills again, in seconds from `now`: a Go duration ("6m0s", "20ms"), a
    number of seconds, a Unix time (seconds or milliseconds) or an RFC 3339 time."""
    text = value.strip()
    if _DURATION.fullmatch(text):
        parts = _DURATION_PART.findall(text)
        return sum(float(number) * _SECONDS_PER_UNIT[unit] for number, unit in parts)
    number = _non_negative(text)
    if number is None:
        return _until(_rfc3339(text), now)
    if number >= _UNIX_MS_FROM:
        return _until(number / 1000.0, now)
    return _until(number, now) if number >= _UNIX_TIME_FROM else number


def _retry_after(headers: Mapping[str, str], now: float | None) -> float | None:
    # OpenAI's milliseconds are the finer of the two when both are sent.
    precise = _first(headers, (RETRY_AFTER_MS,), _milliseconds)
    return precise if precise is not None else retry_after_s(headers.get(RETRY_AFTER), now=now)


def _first(
    headers: Mapping[str, str], names: tuple[str, ...], read: Callable[[str], T | None]
) -> T | None:
    for name in names:
        value = headers.get(name)
        parsed = read(value) if value is not None else None
        if parsed is not None:
            return parsed
    return None


def _count(value: str) -> int | None:
    text = value.strip()
    # isascii() too: str.isdigit() accepts digits such as "²" that int() refuses.
    return int(text) if text.isascii() and text.isdigit() else None


def _milliseconds(value: str) -> float | None:
    number = _non_negative(value)
    return number / 1000.0 if number is not None else None


def _non_negative(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _http_date(value: str) -> float | None:
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    # An HTTP date is GMT; one written with "-0000" parses without a zone.
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _rfc3339(text: str) -> float | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    # RFC 3339 times carry their offset; one without is not a time this can place.
    return moment.timestamp() if moment.tzinfo is not None else None


def _until(moment: float | None, now: float) -> float | None:
    return None if moment is None else max(0.0, moment - now)

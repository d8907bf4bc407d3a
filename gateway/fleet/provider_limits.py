"""What a backend's provider last said of its rate limits, and what the fleet makes of it.

Three uses, each a few comparisons on an answer the adapter has already read
(`providers.rate_limits.RateLimitSignal`), so cheap enough for the request path:

- a 429 keeps the backend out for its Retry-After, else the wait its rate-limit headers
  imply (the reset of a budget they report spent), else `DEFAULT_429_COOL_DOWN_S`;
- a successful answer that reports a budget spent (0 requests or tokens left, with a reset)
  keeps the backend out until that reset: the gateway slows before the provider refuses;
- the remaining request count caps the backend's capacity (`ProviderBudget.headroom`): a
  provider that will take N more requests before its reset takes at most N more in
  flight, whatever `max_concurrency` says;
- the remaining token count, less what was sent since (each request's prompt plus its
  `max_tokens`, the most a provider may charge it), is shown to policies
  (`BackendView.provider_tokens_left`): `capacity-filter` drops a backend that cannot take
  this request's tokens before its reset.

Every cool-down lasts at most the backend's `rate_limits.max_cool_down_s`, and a reading
is used at most `rate_limits.stale_after_s` (less when its reset comes sooner): a reading
that holds traffic off must lapse on its own, as no new answer will replace it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from providers.rate_limits import RateLimitSignal

DEFAULT_429_COOL_DOWN_S = 1.0
"""How long a 429 that names no wait keeps the backend out."""


@dataclass(frozen=True, slots=True)
class ProviderBudget:
    """One reading of a provider's remaining budgets, taken when an answer arrived."""

    remaining_requests: int | None
    remaining_tokens: int | None
    read_at: float
    """The fleet's clock when read."""
    read_at_unix: float
    """The same moment in Unix seconds, for people and dashboards."""
    until: float
    """The fleet's clock when the reading stops saying anything: its earliest reset, or
    `stale_after_s` after it was read."""
    requests_at_read: int
    """The backend's dispatch count when read: later dispatches come off the headroom."""
    tokens_at_read: int = 0
    """Tokens sent to the backend when read (prompt plus `max_tokens` per request):
    later ones come off the token headroom."""

    def current(self, now: float) -> bool:
        return now < self.until

    def headroom(self, requests_now: int) -> int | None:
        """Requests the provider still takes before its reset, by this reading, less the
        ones dispatched since; None when it reported no request count."""
        if self.remaining_requests is None:
            return None
        return max(0, self.remaining_requests - (requests_now - self.requests_at_read))

    def tokens_left(self, tokens_now: int) -> int | None:
        """Tokens the provider still takes before its reset, by this reading, less the
        ones sent since; None when it reported no token count."""
        if self.remaining_tokens is None:
            return None
        return max(0, self.remaining_tokens - (tokens_now - self.tokens_at_read))


def read_budget(
    signal: RateLimitSignal,
    *,
    now: float,
    now_unix: float,
    requests: int,
    stale_after_s: float,
    tokens: int = 0,
) -> ProviderBudget | None:
    """The reading in `signal`, or None when it carries no remaining count."""
    if signal.remaining_requests is None and signal.remaining_tokens is None:
        return None
    resets = (signal.requests_reset_s, signal.tokens_reset_s)
    hold_s = min([stale_after_s, *(r for r in resets if r is not None)])
    return ProviderBudget(
        signal.remaining_requests,
        signal.remaining_tokens,
        read_at=now,
        read_at_unix=now_unix,
        until=now + hold_s,
        requests_at_read=requests,
        tokens_at_read=tokens,
    )


def spent_budget(signal: RateLimitSignal) -> tuple[float, str] | None:
    """How long the budgets `signal` reports spent keep the backend out, and why; None
    when it reports none spent with a reset."""
    spent = [
        (f"0 {what}", reset)
        for what, left, reset in (
            ("requests", signal.remaining_requests, signal.requests_reset_s),
            ("tokens", signal.remaining_tokens, signal.tokens_reset_s),
        )
        if left == 0 and reset is not None
    ]
    if not spent:
        return None
    wait_s = max(reset for _, reset in spent)
    left = " and ".join(what for what, _ in spent)
    return wait_s, f"provider budget spent: {left} left, resets in {wait_s:.1f} s"


def rate_limited_wait(
    retry_after_s: float | None, signal: RateLimitSignal | None
) -> tuple[float, str]:
    """How long a 429 keeps the backend out, and what said so."""
    if retry_after_s is not None:
        return retry_after_s, f"Retry-After {retry_after_s:.1f} s"
    wait_s = signal.wait_s if signal is not None else None
    if wait_s is not None:
        return wait_s, f"budget resets in {wait_s:.1f} s"
    return DEFAULT_429_COOL_DOWN_S, "no wait given"


def capped(seconds: float, reason: str, cap_s: float) -> tuple[float, str]:
    """`seconds` at most `cap_s`, the reason saying so when it was cut."""
    if seconds <= cap_s:
        return seconds, reason
    return cap_s, f"{reason}, kept out {cap_s:.1f} s (rate_limits.max_cool_down_s)"

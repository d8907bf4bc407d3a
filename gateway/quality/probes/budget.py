"""Tokens one backend's probes spent in the last hour, against its hourly budget."""

from __future__ import annotations

from collections import deque

_HOUR_S = 3600.0


class ProbeBudget:
    """Tokens one backend's probes spent in the last hour."""

    def __init__(self, per_hour: int) -> None:
        self.per_hour = per_hour
        self._spent: deque[tuple[float, int]] = deque()

    def spent(self, now: float) -> int:
        while self._spent and now - self._spent[0][0] >= _HOUR_S:
            self._spent.popleft()
        return sum(tokens for _, tokens in self._spent)

    def allows(self, now: float, estimate: int) -> bool:
        return self.spent(now) + estimate <= self.per_hour

    def charge(self, now: float, tokens: int) -> None:
        self._spent.append((now, tokens))

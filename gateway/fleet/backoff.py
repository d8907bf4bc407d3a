"""Jittered doubling back-off, the one used by backend ejection, quality ejection and the
Redis reconnect: each delay in a row doubles up to a cap, and jitter keeps gateways that
failed together from all coming back in step."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import random

DEFAULT_JITTER = 0.2
"""Up to this share longer: health ejection and the Redis reconnect use it."""


class Backoff:
    """Delays for attempts in a row, starting over at `reset()`.

    The n-th delay since the last reset is `min(base_s * 2**(n-1), cap_s)`, then stretched
    by `1 + jitter * u` with `u` drawn once per delay from `rng`: the cap applies before
    the jitter, so a delay can be up to `jitter` of the cap longer than the cap. With
    `cap_first=False` the first delay is `base_s` even above the cap (the Redis reconnect
    waits one full publish interval first); later delays are capped all the same.
    """

    __slots__ = ("_attempts", "_base_s", "_cap_first", "_cap_s", "_jitter", "_next_s", "_rng")

    def __init__(
        self,
        base_s: float,
        cap_s: float,
        *,
        rng: random.Random,
        jitter: float = DEFAULT_JITTER,
        cap_first: bool = True,
    ) -> None:
        if base_s <= 0 or cap_s <= 0 or jitter < 0:
            raise ValueError(
                f"back-off needs base_s, cap_s > 0, jitter >= 0: {base_s, cap_s, jitter}"
            )
        self._base_s = base_s
        self._cap_s = cap_s
        self._cap_first = cap_first
        self._jitter = jitter
        self._rng = rng
        self._next_s = 0.0
        self._attempts = 0

    @property
    def attempts(self) -> int:
        """Delays handed out since the last reset (the doubling's exponent plus one)."""
        return self._attempts

    def next_s(self) -> float:
        """The next delay in seconds, jitter included; counts one more attempt."""
        if self._attempts == 0:
            self._next_s = min(self._base_s, self._cap_s) if self._cap_first else self._base_s
        else:
            # Doubling what was handed out, not base * 2**n: the same numbers (doubling a
            # float is exact), and an exponent that grows for days cannot overflow.
            self._next_s = min(self._next_s * 2, self._cap_s)
        self._attempts += 1
        return self._next_s * (1.0 + self._jitter * self._rng.random())

    def reset(self) -> None:
        """Start over: the next delay is the first again."""
        self._attempts = 0

"""Requests the gateway refuses itself: each counted, and logged and stored within bounds.

A refusal is an answer the gateway gives before or instead of routing: a body that is
malformed or too large, an unknown model, a bad key, a key's or route's rate limit or
budget, a method other than POST, a drain's 503. On the event loop, `Refusals` counts each
by (status, code) (the sampler hands the counts to Prometheus) and asks two token buckets
per (status, code) whether it is written: as an access-log line (`log_lines_per_minute`)
and as a request record (`records_per_minute`: a store row and the dashboard's list). Only
what a bucket lets through crosses to the telemetry thread, as a `Refusal` in the bounded
pipe finished requests take, so a flood of bad requests fills neither the disk, the
database nor the pipe's room for real records. Lines a bucket held back are counted and
summed up in one `Suppressed` line per (status, code) at most every `summary_every_s`
(the sampler's tick calls `summarise`; `stop_telemetry` the last time).

Refusals after a decision (flow control's 429 `queue_full` and the rest, the dispatcher's
`backends_cooling_down`) are request records through `Exchange` already, every one kept:
only their access-log line asks the same bucket (`line`), and their record carries the same
cut `reason`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gateway.tenancy.buckets import refill

if TYPE_CHECKING:
    from collections.abc import Callable

    from gateway.telemetry.config import RefusedConfig
    from gateway.telemetry.record import ClientEndpoint

RefusalKey = tuple[int, str]
"""(HTTP status, error code)."""

_OTHER = "other"
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


@dataclass(frozen=True, slots=True)
class Refusal:
    """One refused request that a bucket let through to the telemetry thread."""

    at: float
    """Wall-clock time (Unix seconds) the request arrived."""
    status: int
    code: str
    reason: str
    """The error message the client got, on one line, cut to `max_reason_chars`."""
    endpoint: ClientEndpoint
    route: str | None
    """The route, when the request got as far as naming one that exists."""
    key_id: str | None
    """The client key's id when it was checked and valid (never the key)."""
    team: str | None
    e2e_s: float
    logged: bool
    """It gets an access-log line."""
    sampled: bool
    """It is kept as a request record (the store's row, the dashboard's list)."""


@dataclass(frozen=True, slots=True)
class Suppressed:
    """Access-log lines of one (status, code) held back since its last line or summary."""

    at: float
    """Wall-clock time of the summary."""
    status: int
    code: str
    lines: int
    over_s: float
    """From the first line held back to the summary."""


RefusalItem = Refusal | Suppressed


class Refusals:
    """Counts, limits and hands on the gateway's refusals (event loop only)."""

    def __init__(
        self,
        config: RefusedConfig,
        emit: Callable[[RefusalItem], None],
        *,
        logs: bool,
        samples: bool,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """`emit` hands an item to the telemetry thread without blocking (the pipe's);
        `logs`: an access log is written; `samples`: records are kept (a store or a
        dashboard); `clock` is the one the proxy's `started` times come from."""
        self._config = config
        self._emit = emit
        self._logs = logs
        self._samples = samples
        self._clock = clock
        self._wall = wall
        self.counts: dict[RefusalKey, int] = {}
        """Every refusal so far by (status, code): the sampler's to hand to Prometheus."""
        self._buckets: dict[RefusalKey, _Buckets] = {}
        """Per key, bounded by `max_codes` (and an `other` per status beyond them)."""
        self._held: dict[RefusalKey, tuple[int, float]] = {}
        """Lines held back per key: how many, and when the first was."""

    def refused(
        self,
        status: int,
        code: str,
        message: str,
        *,
        endpoint: ClientEndpoint,
        started: float,
        route: str | None = None,
        key_id: str | None = None,
        team: str | None = None,
    ) -> None:
        """Count a refusal; hand it on when a bucket lets it be logged or kept. `started`:
        when the request arrived, on this object's clock (`time.monotonic`)."""
        key = self._key(status, code)
        self.counts[key] = self.counts.get(key, 0) + 1
        now = self._clock()
        logged = self._line(key, now)
        sampled = self._samples and self._buckets[key].record.take(now)
        if not (logged or sampled):
            return
        e2e_s = max(0.0, now - started)
        refusal = Refusal(
            at=self._wall() - e2e_s,
            status=key[0],
            code=key[1],
            reason=self.reason(message),
            endpoint=endpoint,
            route=route,
            key_id=key_id,
            team=team,
            e2e_s=e2e_s,
            logged=logged,
            sampled=sampled,
        )
        self._emit(refusal)

    def line(self, status: int, code: str) -> bool:
        """Whether a refusal that is a request record anyway (after a decision) gets its
        access-log line; one held back is counted towards its summary. Not counted in
        `counts`: its record is."""
        return self._line(self._key(status, code), self._clock())

    def reason(self, message: str) -> str:
        """`message` on one line, cut to `max_reason_chars` (a cut one ends with `…`)."""
        limit = self._config.max_reason_chars
        flat = _CONTROL.sub(" ", message[: limit + 1])
        return flat if len(flat) <= limit else flat[: limit - 1] + "…"

    def summarise(self, *, final: bool = False) -> None:
        """Hand on one `Suppressed` per (status, code) whose held-back lines have waited
        `summary_every_s` (all of them when `final`)."""
        now, wall = self._clock(), self._wall()
        for key, (lines, since) in list(self._held.items()):
            if final or now - since >= self._config.summary_every_s:
                del self._held[key]
                self._emit(Suppressed(wall, key[0], key[1], lines, now - since))

    def counted(self, code: str) -> int:
        """Refusals with `code`, whatever their status."""
        return sum(n for (_, c), n in self.counts.items() if c == code)

    def _key(self, status: int, code: str) -> RefusalKey:
        """(status, code), or (status, `other`) beyond `max_codes` distinct pairs."""
        key = (status, code)
        if key not in self._buckets:
            if len(self._buckets) >= self._config.max_codes:
                key = (status, _OTHER)
            if key not in self._buckets:
                config, now = self._config, self._clock()
                self._buckets[key] = _Buckets(
                    _Bucket(config.log_lines_per_minute, now),
                    _Bucket(config.records_per_minute, now),
                )
        return key

    def _line(self, key: RefusalKey, now: float) -> bool:
        if not self._logs:
            return False
        if self._buckets[key].line.take(now):
            return True
        lines, since = self._held.get(key, (0, now))
        self._held[key] = (lines + 1, since)
        return False


@dataclass(slots=True)
class _Bucket:
    """A token bucket of `per_minute` (`gateway.tenancy.buckets`' arithmetic): full when
    made, refilled at per_minute / 60 a second; 0 lets nothing through."""

    per_minute: int
    at: float
    level: float = field(init=False)

    def __post_init__(self) -> None:
        self.level = float(self.per_minute)

    def take(self, now: float) -> bool:
        if self.per_minute == 0:
            return False
        rate_per_s = self.per_minute / 60.0
        level = refill(self.level, self.per_minute, rate_per_s, now - self.at)
        self.at = max(self.at, now)
        taken = level >= 1.0
        self.level = level - 1.0 if taken else level
        return taken


@dataclass(frozen=True, slots=True)
class _Buckets:
    """A (status, code)'s two buckets: its access-log lines and its records."""

    line: _Bucket
    record: _Bucket

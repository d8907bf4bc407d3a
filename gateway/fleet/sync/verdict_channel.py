"""What every channel of peer verdicts does alike (health's in `health_share`, quality's in
`gateway.quality.shared`): it queues the verdicts reached here, publishes them in
`peer_wire`'s batches while they are fresh, and checks a peer's before its channel
applies them, with the counts `GET /v1/switchyard/state` shows per channel.

A channel adds only what is its own: which verdicts it hears of (`attach`, `detach`,
`reassert`), how one travels (`_item`), what a peer's item must name to be believed here
(`_subject`), and what believing it changes (`_apply_verdict`).

Queued: the latest verdict per key (a backend and a kind, or a backend and a model), at
most `max_queued` (the oldest goes first), each with the wall-clock time it was reached.
One still queued when it is older than `max_age_s` is not published: peers would ignore
it. Applied: an item whose `at` is further than `max_age_s` from this replica's wall clock
is stale (counted, ignored); one that is malformed or names what this replica does not
know is rejected (counted, ignored), and so is a batch that does not decode. Every item
carries `at` and `why`; the rest is the channel's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gateway.fleet.sync.peer_wire import apply_batch, encode_batch, fresh, seconds, text
from gateway.fleet.sync.shared_channel import ChannelCounts

Verdict = TypeVar("Verdict")
"""What a channel queues with a verdict's key, to build its item from when it is sent."""
Subject = TypeVar("Subject")
"""What a peer's item is about, once `_subject` has checked that this replica knows it."""
VerdictKey = tuple[str, str]
"""What one verdict is about: a newer verdict with the same key replaces the queued one."""


@dataclass(frozen=True, slots=True)
class Envelope:
    """What every peer item carries, read before its channel sees the rest."""

    sender: str
    """The sending replica's id."""
    at_unix: float
    """When the sender reached the verdict (its wall clock)."""
    why: str


class VerdictChannel(ChannelCounts, ABC, Generic[Verdict, Subject]):
    """A `SharedChannel` of verdicts; see the module doc."""

    name: str

    def __init__(self, max_age_s: float, max_queued: int, *, wall: Callable[[], float]) -> None:
        self._max_age_s = max_age_s
        self._max_queued = max(1, max_queued)
        self._wall = wall
        self._pending: dict[VerdictKey, tuple[float, Verdict]] = {}
        super().__init__()

    @abstractmethod
    def attach(self) -> None:
        """Hear of this replica's verdicts from now on (the sync is starting)."""

    @abstractmethod
    def detach(self) -> None:
        """Hear of them no longer (the sync has stopped)."""

    @abstractmethod
    def reassert(self) -> None:
        """Queue again this replica's own verdicts that still hold, stated now: for a peer
        that joined, or reconnected, after they were published."""

    @abstractmethod
    def _item(self, key: VerdictKey, verdict: Verdict, now_unix: float) -> dict[str, object] | None:
        """How a queued verdict travels, `why` included and `at` left to the caller; None
        when it is no longer news."""

    @abstractmethod
    def _subject(self, item: dict[str, Any]) -> Subject:
        """What a peer's item is about; WireError when malformed or unknown here."""

    @abstractmethod
    def _apply_verdict(
        self, subject: Subject, item: dict[str, Any], envelope: Envelope, now_unix: float
    ) -> bool:
        """Apply a fresh peer verdict; True when it changed anything. WireError when the
        item's own fields are malformed."""

    def _queue(self, key: VerdictKey, at_unix: float, verdict: Verdict) -> None:
        """Queue a verdict reached here at `at_unix`; it replaces one queued for `key`."""
        self._pending.pop(key, None)
        if len(self._pending) >= self._max_queued:
            self._pending.pop(next(iter(self._pending)))
        self._pending[key] = (at_unix, verdict)

    def take(self, replica: str) -> list[bytes]:
        """The messages to publish now; what is queued is handed over (and so lost if the
        publish fails: peers then learn from the next verdict, or a restatement)."""
        pending, self._pending = self._pending, {}
        now = self._wall()
        items: list[dict[str, object]] = []
        for key, (at, verdict) in pending.items():
            item = self._item(key, verdict, now) if fresh(at, now, self._max_age_s) else None
            if item is not None:
                items.append({**item, "at": at})
        self.published += len(items)
        return encode_batch(replica, items) if items else []

    def apply(self, data: bytes, replica: str) -> None:
        """A peer's message; this replica's own (echoed by pub/sub) is skipped."""
        self.rejected += apply_batch(data, replica, self._wall(), self._apply_item)

    def _apply_item(self, item: dict[str, Any], sender: str, now_unix: float) -> None:
        subject = self._subject(item)
        envelope = Envelope(sender, seconds(item, "at"), text(item, "why"))
        if not fresh(envelope.at_unix, now_unix, self._max_age_s):
            self.stale += 1
            return
        self.applied += self._apply_verdict(subject, item, envelope, now_unix)

    def status(self) -> dict[str, object]:
        return self.counts(len(self._pending))

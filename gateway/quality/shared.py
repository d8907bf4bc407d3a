"""The `quality` channel of the fleet sync: quality ejections and restores shared by gateway
replicas, so that one replica's verdict on a backend x model pair holds in all of them.

The book hands each state change to `_changed` (a dict write: it runs where evidence is
recorded); the fleet sync's task publishes the pending pairs each tick on
`{namespace}:quality`, as the book's view then shows them, and hands the peers' messages
to `apply`, which calls `QualityBook.apply_peer`. Only verdicts travel, never evidence:
each replica keeps judging what it sees itself. Shared are:

- an ejection, with its end as a wall-clock `until` (held here at most this replica's own
  longest quality ejection);
- a restore from probation to healthy, which ends a peer's probation. A pair this replica
  restores after sitting out a peer's ejection (judging no evidence of its own) is not
  shared: it would cut short the probation of the replica that had the evidence.

Suspicion (and its trial) is not shared: each replica tries a suspect on its own traffic,
and only the conviction (an ejection) reaches the others.

An item (batch format in `gateway.fleet.sync.peer_wire`):

    {"backend": "a", "model": "m", "state": "ejected", "until": <unix s>, "at": <unix s>,
     "why": "..."}
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from gateway.fleet.sync.peer_wire import apply_batch, encode_batch, fresh, hold_s, seconds, text
from gateway.fleet.sync.wire import WireError
from gateway.quality.book.quality_book import QualityBook, StateChange

_SHARED_STATES = frozenset({"ejected", "healthy"})


class QualityShare:
    """Publishes this replica's quality verdicts and applies its peers'; see the module doc."""

    name = "quality"

    def __init__(
        self,
        book: QualityBook,
        backends: Iterable[str],
        max_age_s: float,
        *,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._book = book
        self._backends = frozenset(backends)
        self._max_age_s = max_age_s
        self._wall = wall
        cfg = book.config
        self._cap_s = cfg.ejection_max_s * (1.0 + cfg.ejection_jitter)
        self._bound = cfg.max_pairs
        self._pending: dict[tuple[str, str], float] = {}
        """Pairs whose state changed here, with when: at most `max_pairs`."""
        self._peer_held: set[tuple[str, str]] = set()
        """Pairs out on a peer's ejection, whose next restore here is not news."""
        self._applying = False
        self._previous: Callable[[StateChange], None] | None = None
        self.published = 0
        self.applied = 0
        self.stale = 0
        self.rejected = 0

    def attach(self) -> None:
        """Receive the book's changes from now on (the sync is starting). The book outlives
        a config reload: the listener it had is put back by `detach` if this one is still
        its listener then (a generation that failed to start)."""
        self._previous, self._book.on_change = self._book.on_change, self._changed

    def detach(self) -> None:
        if self._book.on_change == self._changed:
            self._book.on_change = self._previous

    def reassert(self) -> None:
        """Queue again the pairs this replica itself holds ejected, stated now: for a peer
        that joined, or reconnected, after they were published."""
        now = self._wall()
        for key in self._book.pairs():
            if key not in self._peer_held and self._book.view(*key).state == "ejected":
                self._queue(key, now)

    def _changed(self, change: StateChange) -> None:
        if self._applying:
            return  # a peer's verdict, not this replica's
        key = (change.backend, change.model)
        if change.after == "ejected":
            self._peer_held.discard(key)
        elif change.after == "healthy" and key in self._peer_held:
            self._peer_held.discard(key)
            return
        restored = change.before == "probation" and change.after == "healthy"
        if change.after != "ejected" and not restored:
            return  # a suspicion, a probation, a trial cleared: each replica's own business
        self._queue(key, self._wall())

    def _queue(self, key: tuple[str, str], at: float) -> None:
        self._pending.pop(key, None)
        if len(self._pending) >= self._bound:
            self._pending.pop(next(iter(self._pending)))
        self._pending[key] = at

    def take(self, replica: str) -> list[bytes]:
        """The messages to publish now: each changed pair as the book shows it now."""
        pending, self._pending = self._pending, {}
        now = self._wall()
        items: list[dict[str, object]] = []
        for (backend, model), at in pending.items():
            view = self._book.view(backend, model)
            if view.state not in _SHARED_STATES or not fresh(at, now, self._max_age_s):
                continue
            item: dict[str, object] = {
                "backend": backend,
                "model": model,
                "state": view.state,
                "at": at,
                "why": view.reason,
            }
            if view.state == "ejected":
                item["until"] = now + view.ejected_for_s
            items.append(item)
        self.published += len(items)
        return encode_batch(replica, items) if items else []

    def apply(self, data: bytes, replica: str) -> None:
        """A peer's message; this replica's own (echoed by pub/sub) is skipped."""
        self.rejected += apply_batch(data, replica, self._wall(), self._apply_item)

    def _apply_item(self, item: dict[str, Any], sender: str, now: float) -> None:
        backend, model, state = text(item, "backend"), text(item, "model"), text(item, "state")
        why, at = text(item, "why"), seconds(item, "at")
        if backend not in self._backends or state not in _SHARED_STATES:
            raise WireError(f"unknown backend or state: {backend!r}, {state!r}")
        if not fresh(at, now, self._max_age_s):
            self.stale += 1
            return
        for_s = hold_s(seconds(item, "until"), now, self._cap_s) if state == "ejected" else 0.0
        self._applying = True
        try:
            changed = self._book.apply_peer(
                backend,
                model,
                "ejected" if state == "ejected" else "healthy",
                for_s,
                f"ejected by replica {sender[:8]}: {why}",
            )
        finally:
            self._applying = False
        if changed and state == "ejected":
            if len(self._peer_held) >= self._bound:
                self._peer_held.clear()  # forgetting only risks sharing a restore
            self._peer_held.add((backend, model))
        self.applied += changed

    def status(self) -> dict[str, object]:
        return {
            "queued": len(self._pending),
            "published": self.published,
            "applied": self.applied,
            "stale": self.stale,
            "rejected": self.rejected,
        }

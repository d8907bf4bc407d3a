"""The `quality` channel of the fleet sync: quality ejections and restores shared by gateway
replicas, so that one replica's verdict on a backend x model pair holds in all of them.

The book hands each state change to `_changed` (a dict write: it runs where evidence is
recorded); the fleet sync's task publishes the pending pairs each tick on
`{namespace}:quality`, as the book's view then shows them, and hands the peers' messages
to `apply`, which calls `QualityBook.apply_peer` (queueing, publishing and the checks every
peer verdict passes: `gateway.fleet.sync.verdict_channel`). Only verdicts travel, never evidence:
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

from gateway.fleet.sync.peer_wire import hold_s, seconds, text
from gateway.fleet.sync.verdict_channel import Envelope, VerdictChannel, VerdictKey
from gateway.fleet.sync.wire import WireError
from gateway.quality.book.quality_book import QualityBook, StateChange

_SHARED_STATES = frozenset({"ejected", "healthy"})


class QualityShare(VerdictChannel[None, tuple[str, str, str]]):
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
        cfg = book.config
        # Queued: the pairs whose state changed here, read from the book when sent.
        super().__init__(max_age_s, cfg.max_pairs, wall=wall)
        self._book = book
        self._backends = frozenset(backends)
        self._cap_s = cfg.ejection_max_s * (1.0 + cfg.ejection_jitter)
        self._bound = cfg.max_pairs
        self._peer_held: set[tuple[str, str]] = set()
        """Pairs out on a peer's ejection, whose next restore here is not news."""
        self._applying = False
        self._previous: Callable[[StateChange], None] | None = None

    def attach(self) -> None:
        """Receive the book's changes from now on (the sync is starting). The book outlives
        a config reload: the listener it had is put back by `detach` if this one is still
        its listener then (a generation that failed to start)."""
        self._previous, self._book.on_change = self._book.on_change, self._changed

    def detach(self) -> None:
        if self._book.on_change == self._changed:
            self._book.on_change = self._previous

    def reassert(self) -> None:
        """Queue again the pairs this replica itself holds ejected, stated now."""
        now = self._wall()
        for key in self._book.pairs():
            if key not in self._peer_held and self._book.view(*key).state == "ejected":
                self._queue(key, now, None)

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
        self._queue(key, self._wall(), None)

    def _item(self, key: VerdictKey, verdict: None, now_unix: float) -> dict[str, object] | None:
        """The pair as the book shows it now."""
        backend, model = key
        view = self._book.view(backend, model)
        if view.state not in _SHARED_STATES:
            return None
        item: dict[str, object] = {
            "backend": backend,
            "model": model,
            "state": view.state,
            "why": view.reason,
        }
        if view.state == "ejected":
            item["until"] = now_unix + view.ejected_for_s
        return item

    def _subject(self, item: dict[str, Any]) -> tuple[str, str, str]:
        backend, model, state = text(item, "backend"), text(item, "model"), text(item, "state")
        if backend not in self._backends or state not in _SHARED_STATES:
            raise WireError(f"unknown backend or state: {backend!r}, {state!r}")
        return backend, model, state

    def _apply_verdict(
        self,
        subject: tuple[str, str, str],
        item: dict[str, Any],
        envelope: Envelope,
        now_unix: float,
    ) -> bool:
        backend, model, state = subject
        for_s = hold_s(seconds(item, "until"), now_unix, self._cap_s) if state == "ejected" else 0.0
        self._applying = True
        try:
            changed = self._book.apply_peer(
                backend,
                model,
                "ejected" if state == "ejected" else "healthy",
                for_s,
                f"ejected by replica {envelope.sender[:8]}: {envelope.why}",
            )
        finally:
            self._applying = False
        if changed and state == "ejected":
            if len(self._peer_held) >= self._bound:
                self._peer_held.clear()  # forgetting only risks sharing a restore
            self._peer_held.add((backend, model))
        return changed

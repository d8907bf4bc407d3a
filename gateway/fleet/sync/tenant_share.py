"""The `tenants` channel of the fleet sync: flow control's per-tenant service (the decayed
tokens `fair-share-order` ranks by) shared by gateway replicas, so that each ranks tenants
by what the whole fleet has served them rather than by its own share of their traffic.

Flow control hands each charge made here to `enqueue` (on the request path: a dict
write). Charges to one tenant between two ticks become one pending item, summed with the
ledger's own decay (exponential, halving every `half_life_s`): `tokens` is what they are
worth at `at`, the wall-clock time of the latest. The sync task publishes the pending
items each tick on `{namespace}:tenants` and hands the peers' messages to `apply`, which
checks each item and hands it to flow control `age_s` late (this replica's wall clock
less `at`). Decay being exponential, a charge made at t and added later, decayed by its
age, counts the same as one charged here at t.

Bounds: at most `max_pending` tenants pending between ticks (a charge to one more is
dropped and counted); a pending item not published within `max_age_s` (Redis down) is
dropped and counted, as a peer would ignore it. A peer's item is ignored (`stale`) when
its `at` is further than `max_age_s` from this replica's wall clock, and rejected when its
tenant is not 1 to MAX_TENANT_CHARS printable characters or its tokens not a finite
number in [0, MAX_TOKENS]. Charges are events, not states: none is restated (`reassert`
does nothing), so a replica that joins late, or misses messages while Redis is away,
counts its peers' charges from then on; what it missed decays away within a few
half-lives. Batch format in `peer_wire`; an item is

    {"tenant": "key:k-prod", "tokens": 5120.0, "at": <unix s>}
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from gateway.fleet.sync.peer_wire import apply_batch, encode_batch, fresh, number, seconds
from gateway.fleet.sync.shared_channel import ChannelCounts
from gateway.fleet.sync.wire import WireError

MAX_TENANT_CHARS = 128
"""The longest tenant shared (flow control's are `key:<id>`, `team:<name>` or a header's
first 64 characters); a longer one is not sent, and refused from a peer."""
MAX_TOKENS = 1e12
"""The most service one item may carry: far beyond what a replica serves a tenant between
two ticks, or within a few half-lives; a peer claiming more is not believed."""
ITEMS_PER_MESSAGE = 256
"""Items per message: at MAX_TENANT_CHARS, a message stays under wire.MAX_MESSAGE_BYTES."""

ChargeListener = Callable[[str, float], None]
"""Told each charge made here: (tenant, tokens)."""


class TenantLedger(Protocol):
    """What flow control offers the channel (`gateway.admission.controller.Admission`)."""

    def share_charges(self, listener: ChargeListener | None) -> None:
        """Tell `listener` each charge made here from now on; None: tell no one."""

    def add_peer_charge(self, tenant: str, tokens: float, age_s: float) -> None:
        """A peer's charge made `age_s` ago (by this replica's wall clock)."""


class TenantShare(ChannelCounts):
    """Publishes the service charged here and adds the peers'; see the module doc."""

    name = "tenants"

    def __init__(
        self,
        ledger: TenantLedger,
        *,
        half_life_s: float,
        max_pending: int,
        max_age_s: float,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._ledger = ledger
        self._rate = math.log(2) / half_life_s
        self._max_pending = max(1, max_pending)
        self._max_age_s = max_age_s
        self._wall = wall
        self._pending: dict[str, tuple[float, float]] = {}
        """tenant -> (tokens as of `at`, at): the charges since the last tick."""
        super().__init__()
        self.dropped = 0

    def attach(self) -> None:
        self._ledger.share_charges(self.enqueue)

    def detach(self) -> None:
        self._ledger.share_charges(None)

    def reassert(self) -> None:
        """Nothing to restate: a charge is told once (see the module doc)."""

    def enqueue(self, tenant: str, tokens: float) -> None:
        """Queue a charge made here now; it joins the tenant's pending one."""
        at = self._wall()
        pending = self._pending.get(tenant)
        if pending is not None:
            self._pending[tenant] = self._summed(pending, tokens, at)
        elif len(self._pending) < self._max_pending:
            self._pending[tenant] = (tokens, at)
        else:
            self.dropped += 1

    def _summed(
        self, pending: tuple[float, float], tokens: float, at: float
    ) -> tuple[float, float]:
        """Both charges as one, worth what they are at the later one's time."""
        before, since = pending
        latest = max(at, since)  # a wall clock stepped back: the later stays the time
        decay = self._rate
        total = before * math.exp(-decay * (latest - since)) + tokens * math.exp(
            -decay * (latest - at)
        )
        return total, latest

    def take(self, replica: str) -> list[bytes]:
        """The messages to publish now; what is pending is handed over (and lost if the
        publish fails: peers count from the next charge)."""
        pending, self._pending = self._pending, {}
        now = self._wall()
        items: list[dict[str, object]] = []
        for tenant, (tokens, at) in pending.items():
            if len(tenant) > MAX_TENANT_CHARS or not fresh(at, now, self._max_age_s):
                self.dropped += 1
                continue
            items.append({"tenant": tenant, "tokens": min(tokens, MAX_TOKENS), "at": at})
        self.published += len(items)
        return encode_batch(replica, items, ITEMS_PER_MESSAGE) if items else []

    def apply(self, data: bytes, replica: str) -> None:
        """A peer's message; this replica's own (echoed by pub/sub) is skipped."""
        self.rejected += apply_batch(data, replica, self._wall(), self._apply_item)

    def _apply_item(self, item: dict[str, Any], sender: str, now_unix: float) -> None:
        tenant = _tenant(item)
        tokens = number(item, "tokens", 0.0, MAX_TOKENS)
        at = seconds(item, "at")
        if not fresh(at, now_unix, self._max_age_s):
            self.stale += 1
            return
        self._ledger.add_peer_charge(tenant, tokens, now_unix - at)
        self.applied += 1

    def status(self) -> dict[str, object]:
        return {**self.counts(len(self._pending)), "dropped": self.dropped}


def _tenant(item: dict[str, Any]) -> str:
    value = item.get("tenant")
    if not isinstance(value, str) or not 0 < len(value) <= MAX_TENANT_CHARS:
        raise WireError(f"tenant is not a string of 1 to {MAX_TENANT_CHARS} characters")
    if not value.isprintable():
        raise WireError("tenant has unprintable characters")
    return value

"""Each tenant's recent service: tokens (input, plus output at `output_weight` each),
decayed with a half-life, over the tenant's weight. What `fair-share-order` reads, and
whether a tenant has had more than its share while others wanted some (`over_share`).

With replicas sharing state through Redis, the ledger holds the fleet's service: its own
charges (told to `on_charge`, which the fleet sync publishes) and its peers' (`charge_at`,
a charge made earlier, decayed as if it had been charged here then)."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from gateway.admission.config import TenantsConfig


_OVER_BY = 1.25
"""A tenant is over its share past this many times it: tenants of equal demand, each near
its share, do not take turns being held back."""


class ServiceLedger:
    """Decayed service per tenant; at most `max_tenants`, the least recently charged
    forgotten first (a forgotten tenant counts as unserved, which favours it: bounded
    memory errs towards fairness to newcomers).

    Every entry decays at the same rate, so their sum is kept as one decayed total; the
    tenants charged within a half-life (the active ones) and their weights' sum are kept
    in charge order and expired from the front: `over_share` is O(1) amortised."""

    def __init__(self, config: TenantsConfig) -> None:
        self._config = config
        self._rate = math.log(2) / config.half_life_s
        self._entries: OrderedDict[str, tuple[float, float]] = OrderedDict()
        """tenant -> (service at `at`, at)."""
        self._total = (0.0, 0.0)
        """(every tenant's service at `at`, at)."""
        self._active: OrderedDict[str, float] = OrderedDict()
        """tenant -> when last charged, oldest first; within `half_life_s` of the last look."""
        self._active_weight = 0.0
        self.on_charge: Callable[[str, float], None] | None = None
        """Told each charge made here, (tenant, tokens); not `charge_at`'s."""

    def charge(self, tenant: str, tokens: float, now: float) -> None:
        """Service given here now."""
        if tokens <= 0:
            return
        self._add(tenant, tokens, now)
        if self.on_charge is not None:
            self.on_charge(tenant, tokens)

    def charge_at(self, tenant: str, tokens: float, at: float, now: float) -> None:
        """Service given at `at` (on this ledger's clock, before `now`), counted now as it
        would have been had it been charged then: decayed by `now - at`. One dated after
        `now` counts as charged now."""
        if tokens <= 0:
            return
        self._add(tenant, self._worth(tokens, at, now), now)

    def _add(self, tenant: str, tokens: float, now: float) -> None:
        entries = self._entries
        entries[tenant] = (self._decayed(tenant, now) + tokens, now)
        entries.move_to_end(tenant)
        self._total = (self._total_at(now) + tokens, now)
        self._activate(tenant, now)
        while len(entries) > self._config.max_tenants:
            gone, (service, at) = entries.popitem(last=False)
            self._total = (max(0.0, self._total[0] - self._worth(service, at, now)), now)
            if self._active.pop(gone, None) is not None:
                self._active_weight -= self._weight(gone)

    def carry_over(self, old: ServiceLedger) -> None:
        """Take `old`'s service and active tenants (a reload whose tenants settings are
        unchanged: same weights, half-life and bound, same clock)."""
        self._entries = OrderedDict(old._entries)
        self._total = old._total
        self._active = OrderedDict(old._active)
        self._active_weight = old._active_weight

    def charge_answer(self, tenant: str, completion_tokens: int, now: float) -> None:
        """An answer's output tokens, at `output_weight` each."""
        self.charge(tenant, completion_tokens * self._config.output_weight, now)

    def weighted(self, tenants: Iterable[str], now: float) -> Mapping[str, float]:
        """Each tenant's decayed service divided by its weight."""
        return {t: self._decayed(t, now) / self._weight(t) for t in set(tenants)}

    def over_share(self, tenant: str, now: float) -> bool:
        """Whether `tenant` has had more than its weight's share (by a quarter: `_OVER_BY`)
        of the service of the tenants served within a half-life, while at least one other
        was: alone, a tenant is never over its share."""
        if len(self._active) < 2:  # expiry only shrinks it
            return False
        self._expire(now)
        if tenant not in self._active or len(self._active) < 2:
            return False
        total = self._total_at(now)
        if total <= 0 or self._active_weight <= 0:
            return False
        fair = self._weight(tenant) / self._active_weight
        return self._decayed(tenant, now) / total > fair * _OVER_BY

    def _activate(self, tenant: str, now: float) -> None:
        if tenant not in self._active:
            self._active_weight += self._weight(tenant)
        self._active[tenant] = now
        self._active.move_to_end(tenant)
        self._expire(now)

    def _expire(self, now: float) -> None:
        active, horizon = self._active, now - self._config.half_life_s
        while active:
            tenant, at = next(iter(active.items()))
            if at >= horizon:
                return
            del active[tenant]
            self._active_weight -= self._weight(tenant)
        self._active_weight = 0.0  # none left: no float drift carried over

    def _weight(self, tenant: str) -> float:
        return self._config.weights.get(tenant, self._config.default_weight)

    def _total_at(self, now: float) -> float:
        return self._worth(*self._total, now)

    def _decayed(self, tenant: str, now: float) -> float:
        entry = self._entries.get(tenant)
        if entry is None:
            return 0.0
        return self._worth(*entry, now)

    def _worth(self, service: float, at: float, now: float) -> float:
        """`service` counted at `at`, decayed to `now` (none for a time after it)."""
        return service * math.exp(-self._rate * max(0.0, now - at))

    def __len__(self) -> int:
        return len(self._entries)

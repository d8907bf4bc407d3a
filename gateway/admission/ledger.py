"""Each tenant's recent service: tokens (input, plus output at `output_weight` each),
decayed with a half-life, over the tenant's weight. What `fair-share-order` reads.

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


class ServiceLedger:
    """Decayed service per tenant; at most `max_tenants`, the least recently charged
    forgotten first (a forgotten tenant counts as unserved, which favours it: bounded
    memory errs towards fairness to newcomers)."""

    def __init__(self, config: TenantsConfig) -> None:
        self._config = config
        self._rate = math.log(2) / config.half_life_s
        self._entries: OrderedDict[str, tuple[float, float]] = OrderedDict()
        """tenant -> (service at `at`, at)."""
        self.on_charge: Callable[[str, float], None] | None = None
        """Told each charge made here, (tenant, tokens); not `charge_at`'s."""

    def charge(self, tenant: str, tokens: float, now: float) -> None:
        """Service given here now."""
        if tokens <= 0:
            return
        self._set(tenant, self._decayed(tenant, now) + tokens, now)
        if self.on_charge is not None:
            self.on_charge(tenant, tokens)

    def charge_at(self, tenant: str, tokens: float, at: float, now: float) -> None:
        """Service given at `at` (on this ledger's clock, before `now`), counted now as it
        would have been had it been charged then: decayed by `now - at`. One dated after
        `now` counts as charged now."""
        if tokens <= 0:
            return
        late = tokens * math.exp(-self._rate * max(0.0, now - at))
        self._set(tenant, self._decayed(tenant, now) + late, now)

    def charge_answer(self, tenant: str, completion_tokens: int, now: float) -> None:
        """An answer's output tokens, at `output_weight` each."""
        self.charge(tenant, completion_tokens * self._config.output_weight, now)

    def weighted(self, tenants: Iterable[str], now: float) -> Mapping[str, float]:
        """Each tenant's decayed service divided by its weight."""
        weights, default = self._config.weights, self._config.default_weight
        return {t: self._decayed(t, now) / weights.get(t, default) for t in set(tenants)}

    def _set(self, tenant: str, value: float, now: float) -> None:
        entries = self._entries
        entries[tenant] = (value, now)
        entries.move_to_end(tenant)
        while len(entries) > self._config.max_tenants:
            entries.popitem(last=False)

    def _decayed(self, tenant: str, now: float) -> float:
        entry = self._entries.get(tenant)
        if entry is None:
            return 0.0
        value, at = entry
        return value * math.exp(-self._rate * max(0.0, now - at))

    def __len__(self) -> int:
        return len(self._entries)

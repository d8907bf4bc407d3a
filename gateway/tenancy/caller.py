"""Who sent a request: the key it presented, what that key may do, and how it is limited
(rate limits and budgets)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gateway.tenancy.config import OnExhausted

KeyKind = Literal["static", "virtual", "admin"]


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated client. Holds ids and rules only, never the key itself."""

    key_id: str
    """What records carry: a virtual key's id, or a static key's short hash."""
    kind: KeyKind
    name: str = ""
    team: str | None = None
    routes: frozenset[str] | None = None
    """Routes it may use; None: every route."""
    tags: frozenset[str] = frozenset()
    """Placement tags every request of this key requires."""
    rpm: int | None = None
    tpm: int | None = None
    budget_usd_per_day: float | None = None
    budget_usd_per_month: float | None = None
    budget_on_exhausted: OnExhausted | None = None
    """None: `budgets.keys.on_exhausted`."""

    def may_use(self, route: str) -> bool:
        return self.routes is None or route in self.routes

    @property
    def tag_source(self) -> str:
        """How a placement explanation names this key's tags."""
        return f"key:{self.key_id}"

"""Prometheus series of budgets: spend by team, and each route budget's spend and limit.

Registered on the gateway's own registry (the telemetry's) and set by the budget task
after each flush and refresh, never on the request path. Labels are bounded: routes come
from the config, teams are capped as on `switchyard_team_requests_total`; key ids are
never labels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from prometheus_client import CollectorRegistry, Counter, Gauge

from gateway.tenancy.team_labels import TeamLabels

if TYPE_CHECKING:
    from collections.abc import Iterable

    from gateway.tenancy.budgets.ledger import Spend
    from gateway.tenancy.budgets.windows import Period

BUDGET_METRIC_NAMES = (
    "switchyard_team_spend_usd_total",
    "switchyard_route_budget_spent_usd",
    "switchyard_route_budget_limit_usd",
)


class BudgetMetrics:
    def __init__(self, registry: CollectorRegistry, *, max_team_labels: int, shared: bool) -> None:
        self._team = TeamLabels(max_team_labels)
        # Shared totals are the same in every worker; local ones are each worker's own.
        mode: Literal["livemax", "livesum"] = "livemax" if shared else "livesum"
        self.team_spend = Counter(
            "switchyard_team_spend_usd",
            "Spend in US dollars by the team of the client key (`none`: no team; `other`: "
            "beyond the first keys.max_team_labels teams seen), as budgets count it.",
            ("team",),
            registry=registry,
        )
        self.route_spent = Gauge(
            "switchyard_route_budget_spent_usd",
            "What a route with a budget spent in the current UTC day or month.",
            ("route", "window"),
            registry=registry,
            multiprocess_mode=mode,
        )
        self.route_limit = Gauge(
            "switchyard_route_budget_limit_usd",
            "A route's budget for the UTC day or month.",
            ("route", "window"),
            registry=registry,
            multiprocess_mode="livemax",
        )

    def count(self, spends: Iterable[Spend]) -> None:
        for spend in spends:
            if spend.cost_usd > 0:
                self.team_spend.labels(self._team(spend.team)).inc(spend.cost_usd)

    def route_spend(self, route: str, period: Period, spent_usd: float, limit_usd: float) -> None:
        self.route_spent.labels(route, period).set(spent_usd)
        self.route_limit.labels(route, period).set(limit_usd)

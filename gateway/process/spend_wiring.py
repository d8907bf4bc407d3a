"""Budgets fed by telemetry: each finished request is priced on the telemetry thread and
its spend handed to the budget ledger; the budget metrics go on telemetry's registry.

Both are process-wide parts (built once, shared by config generations), wired once here
so that neither package imports the other.
"""

from __future__ import annotations

from gateway.config.root import Config
from gateway.telemetry.spend_sink import SpendSink
from gateway.telemetry.wiring import Telemetry
from gateway.tenancy.budgets.metrics import BudgetMetrics
from gateway.tenancy.budgets.spend_limits import Budgets


def account_spend(telemetry: Telemetry, budgets: Budgets, config: Config) -> None:
    """Add the spend sink to the pipe (before it starts) and the budget metrics."""
    telemetry.pipe.add_sink(SpendSink(telemetry.prices, budgets.ledger.record_request))
    if telemetry.metrics is not None:
        budgets.metrics = BudgetMetrics(
            telemetry.metrics.registry,
            max_team_labels=config.keys.max_team_labels,
            shared=budgets.ledger.shared,
        )

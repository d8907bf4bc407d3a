"""Cascades' series: attempts per tier and outcome, the checks that escalated them, what
the answers cost, and what sending every request to the top tier would have cost.

Cost per passing answer is `switchyard_cascade_cost_usd_total` (every attempt, the judge's
included) over `switchyard_cascade_passing_answers_total`; the saving is its ratio to
`switchyard_cascade_top_tier_cost_usd_total` (each final answer's usage priced at the top
tier's first member: an estimate, since a stronger model writes other answers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter

if TYPE_CHECKING:
    from gateway.telemetry.record import RequestRecord
    from policies.prices import PriceLookup


class CascadeMetrics:
    """Part of `GatewayMetrics`' registry; label values are cascades, their tier routes,
    check names and a fixed set of outcomes, all bounded by the config."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.attempts = Counter(
            "switchyard_cascade_attempts",
            "Attempts of requests to a cascade, by tier route and outcome: escalated (its "
            "answer failed its checks, or the tier failed), passed, failed (the last tier's "
            "answer failed them; the client was told), committed (streamed before the whole "
            "was judged), judge (the judge route's own call).",
            ("cascade", "tier", "outcome"),
            registry=registry,
        )
        self.check_failures = Counter(
            "switchyard_cascade_check_failures",
            "Checks an attempt's answer failed, by cascade, tier route and check (`error`: "
            "the tier answered nothing).",
            ("cascade", "tier", "check"),
            registry=registry,
        )
        self.skipped = Counter(
            "switchyard_cascade_skipped_tiers",
            "Tiers a request did not try because its kind lately failed their checks "
            "(the learned starting tier).",
            ("cascade",),
            registry=registry,
        )
        self.cost = Counter(
            "switchyard_cascade_cost_usd",
            "What a cascade's attempts cost, every tier's and the judge's.",
            ("cascade",),
            registry=registry,
        )
        self.passing = Counter(
            "switchyard_cascade_passing_answers",
            "Answers a cascade gave that passed their checks.",
            ("cascade",),
            registry=registry,
        )
        self.top_cost = Counter(
            "switchyard_cascade_top_tier_cost_usd",
            "The counterfactual: each final answer's usage at the top tier's prices.",
            ("cascade",),
            registry=registry,
        )

    def consume(self, record: RequestRecord, prices: PriceLookup, cost: float) -> None:
        """One attempt's record (telemetry thread); `cost`: what it cost."""
        note = record.cascade
        if note is None:
            return
        name = note.cascade
        self.attempts.labels(name, note.tier_route, note.outcome).inc()
        for failure in note.failures:
            self.check_failures.labels(name, note.tier_route, failure.check).inc()
        if note.attempt == 1 and note.start_tier > 0 and note.outcome != "judge":
            self.skipped.labels(name).inc(note.start_tier)
        self.cost.labels(name).inc(cost)
        if not note.final:
            return
        if not note.failures and record.status == 200 and record.error is None:
            self.passing.labels(name).inc()
        if note.top_tier:
            self.top_cost.labels(name).inc(cost)
        elif note.top is not None:
            backend, model = note.top
            self.top_cost.labels(name).inc(record.cost_usd(prices.lookup(backend, model)))

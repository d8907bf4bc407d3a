"""Prometheus metrics: per backend and route, fed by the telemetry thread and a sampler.

Correct with several uvicorn workers: when `PROMETHEUS_MULTIPROC_DIR` is set (the
`serve --workers N` command sets it), every worker writes its values to files there and
a scrape of any worker aggregates all of them (counters and histograms summed, in-flight
summed over live workers, quality scores the lowest any worker holds). Gauges follow the
serving config: a backend or route a reload removed leaves them (`serving_series.py`).

Ratios (cache-hit, success) are not exported as gauges: they would not add up across
workers. Export the counters and divide in PromQL (docs/operations.md has the queries).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from gateway.telemetry.admission_metrics import AdmissionMetrics
from gateway.telemetry.cascade_metrics import CascadeMetrics
from gateway.telemetry.client_metrics import ClientMetrics
from gateway.telemetry.labelled import Labelled, Tally
from gateway.telemetry.serving_series import Serving, discovered_gone, sweep
from gateway.telemetry.worker_files import scrape_workers
from gateway.tenancy.team_labels import TeamLabels
from policies.prices import NO_PRICES, PriceLookup

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from gateway.telemetry.record import RequestRecord

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_TPOT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64)
_OVERHEAD_BUCKETS = (5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1)

METRIC_NAMES: tuple[str, ...] = (
    "switchyard_requests_total",
    "switchyard_team_requests_total",
    "switchyard_request_errors_total",
    "switchyard_request_duration_seconds",
    "switchyard_time_to_first_token_seconds",
    "switchyard_time_per_output_token_seconds",
    "switchyard_gateway_overhead_seconds",
    "switchyard_decision_duration_seconds",
    "switchyard_in_flight_requests",
    "switchyard_prompt_tokens_total",
    "switchyard_cached_prompt_tokens_total",
    "switchyard_cache_reported_prompt_tokens_total",
    "switchyard_predicted_cached_prompt_tokens_total",
    "switchyard_completion_tokens_total",
    "switchyard_cost_usd_total",
    "switchyard_decisions_total",
    "switchyard_retries_total",
    "switchyard_ejections_total",
    "switchyard_backend_healthy",
    "switchyard_quality_score",
    "switchyard_quality_ejected",
    "switchyard_rejected_requests_total",
    "switchyard_telemetry_dropped_total",
    "switchyard_store_rows_written_total",
    "switchyard_store_up",
    "switchyard_redis_up",
)
"""Every metric family the gateway exports (histograms add _bucket, _sum and _count)."""


@dataclass(frozen=True, slots=True)
class _Series:
    duration: Histogram
    ttft: Histogram
    tpot: Histogram
    overhead: Histogram
    decision: Histogram
    prompt: Counter
    cached: Counter
    reporting: Counter
    predicted: Counter
    completion: Counter


class GatewayMetrics:
    """One registry per gateway (no process-wide globals); a telemetry sink."""

    name = "metrics"

    def __init__(
        self,
        weights: Mapping[str, Mapping[str, float]] | None = None,
        prices: PriceLookup = NO_PRICES,
        max_team_labels: int = 32,
    ) -> None:
        self.multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        self.registry = CollectorRegistry(auto_describe=True)
        self._weights = weights or {}
        self._prices = prices
        self._children: dict[tuple[str, str], _Series] = {}
        self._team = TeamLabels(max_team_labels)
        self.serving: Serving | None = None
        """The serving config's backends and routes (`follow`); None: not told yet."""
        self._define_requests()
        self._define_tokens()
        self._define_state()
        self._requests = Labelled(self.requests)
        self._team_requests = Labelled(self.team_requests)
        self._errors = Labelled(self.errors)
        self._cost = Labelled(self.cost)
        self._decisions = Labelled(self.decisions)
        self._retries = Labelled(self.retries)
        self._counts = Tally()
        self.admission = AdmissionMetrics(self.registry)
        self.cascades = CascadeMetrics(self.registry)
        self.clients = ClientMetrics(self.registry)

    def _define_requests(self) -> None:
        """What happened to requests: counts, errors and latencies."""
        r, route_backend = self.registry, ("route", "backend")
        self.requests = Counter(
            "switchyard_requests",
            "Requests answered, by route, serving backend, HTTP status class and the API the "
            "client called (chat.completions, completions, embeddings, messages, responses).",
            (*route_backend, "status_class", "endpoint"),
            registry=r,
        )
        self.team_requests = Counter(
            "switchyard_team_requests",
            "Requests by the team of the client key (`none`: no team; `other`: beyond the "
            "first keys.max_team_labels teams seen) and HTTP status class.",
            ("team", "status_class"),
            registry=r,
        )
        self.errors = Counter(
            "switchyard_request_errors",
            "Failed requests by error code (the code in the OpenAI-style error body).",
            (*route_backend, "code"),
            registry=r,
        )
        self.duration = Histogram(
            "switchyard_request_duration_seconds",
            "End-to-end time, arrival to the last byte.",
            route_backend,
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.ttft = Histogram(
            "switchyard_time_to_first_token_seconds",
            "Streams: arrival to the first relayed byte.",
            route_backend,
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.tpot = Histogram(
            "switchyard_time_per_output_token_seconds",
            "Streams: decode time per output token after the first.",
            route_backend,
            buckets=_TPOT_BUCKETS,
            registry=r,
        )
        self.overhead = Histogram(
            "switchyard_gateway_overhead_seconds",
            "The gateway's own time before the first byte (reading, routing, dispatching).",
            ("route",),
            buckets=_OVERHEAD_BUCKETS,
            registry=r,
        )
        self.decision = Histogram(
            "switchyard_decision_duration_seconds",
            "Time the policy pipeline took to rank the candidates.",
            ("route",),
            buckets=_OVERHEAD_BUCKETS,
            registry=r,
        )

    def _define_tokens(self) -> None:
        """Tokens and spend, per route and backend; requests in flight."""
        r, route_backend = self.registry, ("route", "backend")
        self.in_flight = Gauge(
            "switchyard_in_flight_requests",
            "Requests being served by the backend now.",
            ("backend",),
            registry=r,
            multiprocess_mode="livesum",
        )
        self.prompt_tokens = self._tokens("switchyard_prompt_tokens", "Prompt tokens sent.")
        self.cached_tokens = self._tokens(
            "switchyard_cached_prompt_tokens", "Prompt tokens the backend reported cached."
        )
        self.reporting_tokens = self._tokens(
            "switchyard_cache_reported_prompt_tokens",
            "Prompt tokens of the responses that reported a cached count (the cache-hit "
            "ratio's denominator: backends that report nothing do not pull it down).",
        )
        self.predicted_cached = self._tokens(
            "switchyard_predicted_cached_prompt_tokens",
            "Prompt tokens the router predicted cached on the backend it chose.",
        )
        self.completion_tokens = self._tokens(
            "switchyard_completion_tokens", "Completion tokens received."
        )
        self.cost = Counter(
            "switchyard_cost_usd",
            "Spend in US dollars at the configured prices of the backend and the upstream "
            "model that answered (its tier, cache reads and writes, reasoning, fee).",
            (*route_backend, "model"),
            registry=r,
        )

    def _define_state(self) -> None:
        """Routing, health, quality and the telemetry's own health."""
        r, route_backend = self.registry, ("route", "backend")
        self.decisions = Counter(
            "switchyard_decisions",
            "Routing decisions by the policy that set the chosen backend apart.",
            (*route_backend, "policy"),
            registry=r,
        )
        self.retries = Counter(
            "switchyard_retries",
            "Attempts that failed and moved on to the next candidate, by failed backend.",
            (*route_backend, "outcome"),
            registry=r,
        )
        self.ejections = Counter(
            "switchyard_ejections",
            "Times a backend was taken out of rotation (kind: health or quality).",
            ("backend", "kind"),
            registry=r,
        )
        self.healthy = Gauge(
            "switchyard_backend_healthy",
            "1 when the backend takes traffic, 0 while ejected or failing probes.",
            ("backend",),
            registry=r,
            multiprocess_mode="livemin",
        )
        self.quality = Gauge(
            "switchyard_quality_score",
            "Live quality score in [0,1] (fidelity: answers; sla: latency targets).",
            ("backend", "model", "component"),
            registry=r,
            multiprocess_mode="livemin",
        )
        self.quality_ejected = Gauge(
            "switchyard_quality_ejected",
            "1 while the backend x model pair is ejected for poor quality.",
            ("backend", "model"),
            registry=r,
            multiprocess_mode="livemax",
        )
        self.rejected = Counter(
            "switchyard_rejected_requests",
            "Requests the gateway refused itself before routing (bad key, body, JSON or "
            "model; a rate limit or budget; draining), by HTTP status and error code. Flow "
            "control's refusals are records: switchyard_request_errors.",
            ("status", "code"),
            registry=r,
        )
        self.dropped = Counter(
            "switchyard_telemetry_dropped",
            "Records dropped because a bounded queue was full or the store was down.",
            ("sink",),
            registry=r,
        )
        self.store_written = Counter(
            "switchyard_store_rows_written", "Rows written to the store.", ("table",), registry=r
        )
        self.store_up = Gauge(
            "switchyard_store_up",
            "1 when the last write to the store succeeded.",
            registry=r,
            multiprocess_mode="livemin",
        )
        self.redis_up = Gauge(
            "switchyard_redis_up",
            "1 while Redis answers, by use (state-sync: shared routing state; limits: "
            "shared rate-limit buckets); 0: that use runs on this process's own state.",
            ("use",),
            registry=r,
            multiprocess_mode="livemin",
        )

    def _tokens(self, name: str, doc: str) -> Counter:
        return Counter(name, doc, ("route", "backend"), registry=self.registry)

    def consume(self, record: RequestRecord) -> None:
        """Fold one finished request in (telemetry thread); its whole-number counts are
        added by `flush()`, at the end of the drain."""
        route, backend = record.route, record.blamed_backend or "none"
        series = self._series(route, backend)
        count = self._counts.add
        status_class = record.status_class
        count(self._requests(route, backend, status_class, record.endpoint))
        count(self._team_requests(self._team(record.team), status_class))
        if record.error is not None:
            count(self._errors(route, backend, record.error))
        series.duration.observe(record.e2e_s)
        if record.ttft_s is not None:
            series.ttft.observe(record.ttft_s)
        tpot = record.tpot_s
        if tpot is not None:
            series.tpot.observe(tpot)
        series.overhead.observe(record.overhead_s)
        series.decision.observe(record.decision.decision.total_us / 1e6)
        cost = 0.0
        if record.backend is not None:
            prompt, cached, completion = record.tokens()
            count(series.prompt, prompt)
            count(series.cached, cached)
            if record.reported_cached:
                count(series.reporting, prompt)
            count(series.predicted, record.predicted_cached_tokens)
            count(series.completion, completion)
            model = record.model
            cost = record.cost_usd(self._prices.lookup(backend, model))
            self._cost(route, backend, model).inc(cost)
        policy = record.deciding_policy(self._weights.get(route, {}))
        chosen = record.decision.decision.chosen or "none"
        count(self._decisions(route, chosen, policy.name))
        for attempt in record.decision.attempts[:-1]:
            if attempt.outcome != "ok":
                count(self._retries(route, attempt.backend, attempt.outcome))
        if record.decision.held is not None:
            self.admission.consume(route, record.decision.held)
        if record.cascade is not None:
            self.cascades.consume(record, self._prices, cost)

    def flush(self) -> None:
        """Add the drain's counts (telemetry thread, once per drain)."""
        self._counts.apply()

    def _series(self, route: str, backend: str) -> _Series:
        """The (route, backend) children, looked up once: `labels()` per update costs more
        than the update itself. Bounded by the config's routes x backends."""
        key = (route, backend)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = _Series(
                duration=self.duration.labels(route, backend),
                ttft=self.ttft.labels(route, backend),
                tpot=self.tpot.labels(route, backend),
                overhead=self.overhead.labels(route),
                decision=self.decision.labels(route),
                prompt=self.prompt_tokens.labels(route, backend),
                cached=self.cached_tokens.labels(route, backend),
                reporting=self.reporting_tokens.labels(route, backend),
                predicted=self.predicted_cached.labels(route, backend),
                completion=self.completion_tokens.labels(route, backend),
            )
        return found

    def sample_backends(self, rows: Iterable[tuple[str, bool, int]]) -> None:
        """(backend, healthy, in flight) for every backend; called about once a second."""
        for name, healthy, in_flight in rows:
            self.healthy.labels(name).set(1.0 if healthy else 0.0)
            self.in_flight.labels(name).set(in_flight)

    def sample_quality(self, rows: Iterable[tuple[str, str, float, float, bool]]) -> None:
        """(backend, model, fidelity, sla, ejected) per pair; called about once a second.
        The quality book outlives reloads: a backend no longer served is skipped."""
        serving = self.serving
        for backend, model, fidelity, sla, ejected in rows:
            if serving is not None and backend not in serving.backends:
                continue
            self.quality.labels(backend, model, "fidelity").set(fidelity)
            self.quality.labels(backend, model, "sla").set(sla)
            self.quality_ejected.labels(backend, model).set(1.0 if ejected else 0.0)

    def follow(self, backends: Iterable[str], routes: Iterable[str]) -> None:
        """The serving config's backends and routes (at start-up and after each reload):
        gauges naming any other stop being exported (`gateway.telemetry.serving_series`)."""
        serving = self.serving = Serving(frozenset(backends), frozenset(routes))
        self.admission.follow(serving.routes)
        gone = partial(discovered_gone, serving=serving)
        for key in [key for key in self._children if gone({"backend": key[1]})]:
            self._children.pop(key, None)
        if self.multiprocess:
            return  # the files keep them; `render` leaves them out
        gauges = (self.healthy, self.in_flight, self.quality, self.quality_ejected)
        sweep(vars(self).values(), (*gauges, self.admission.depth), serving)

    def render(self) -> tuple[bytes, str]:
        """The exposition text (slow with many series: call it off the event loop)."""
        if self.multiprocess:
            return scrape_workers(os.environ[MULTIPROC_ENV], self.serving), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

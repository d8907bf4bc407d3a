"""The telemetry parts a gateway runs, built from its config and started and stopped as one.

The store's modules (SQLAlchemy, Alembic) are imported only when the config turns the
store on: a gateway without one never loads the database layer."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gateway.config.backends import price_book
from gateway.process.tasks import cancel_and_wait
from gateway.store.config import resolve_url
from gateway.telemetry.access_log import AccessLog
from gateway.telemetry.cascade_series import CascadeSeries
from gateway.telemetry.client_metrics import ConnectionTally
from gateway.telemetry.live_prices import LivePrices
from gateway.telemetry.metrics import GatewayMetrics
from gateway.telemetry.pipe import TelemetryPipe
from gateway.telemetry.recent_refusals import RecentRefusals
from gateway.telemetry.refusals import Refusals
from gateway.telemetry.sampler import Sampler
from gateway.telemetry.series import DashboardSeries
from gateway.telemetry.store_sink import StoreSink
from policies.prices import NO_PRICES

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from gateway.config.root import Config
    from gateway.fleet.state import FleetState
    from gateway.quality.book.quality_book import QualityBook
    from gateway.quality.probes.prober import Prober
    from gateway.store.writer import StoreWriter
    from gateway.telemetry.record import ClientEndpoint
    from gateway.tenancy.caller import Caller
    from policies.pipeline import Pipeline
    from providers.errors import ApiError

logger = logging.getLogger("switchyard.telemetry")


@dataclass
class Telemetry:
    pipe: TelemetryPipe
    refusals: Refusals
    """The gateway's own refusals: counted, and logged and kept within bounds (event loop
    only)."""
    metrics: GatewayMetrics | None = None
    series: DashboardSeries | None = None
    cascades: CascadeSeries | None = None
    """The dashboard's view of cascades (with the dashboard on and cascades configured)."""
    recent_refusals: RecentRefusals | None = None
    """The dashboard's list of the last refusals of each code."""
    store: StoreWriter | None = None
    connections: ConnectionTally = field(default_factory=ConnectionTally)
    """Client connections open, and ended by a bound: the HTTP server writes them (on the
    event loop), the sampler exports them."""
    prices: LivePrices = field(default_factory=lambda: LivePrices(NO_PRICES))
    """What the sinks charge records at; a reload swaps in its config's (`use`)."""
    redis_up: Callable[[], Mapping[str, bool]] | None = None
    """Whether each use of Redis answers (`Gateway.redis_up`), for `switchyard_redis_up`."""
    queue_depths: Callable[[], Mapping[tuple[str, str], int]] | None = None
    """Requests held by flow control per (route, class) (the serving generation's)."""
    fleet: FleetState | None = None
    """The serving generation's fleet state, which the sampler's gauges read; a reload
    swaps its generation's in (`follow`)."""
    _sampler: asyncio.Task[None] | None = field(default=None, repr=False)

    def follow(self, config: Config, fleet: FleetState) -> None:
        """Serve `config` from now on (start-up, a reload's new generation): records are
        priced at its prices, and the gauges read off `fleet`, for its backends and routes
        only."""
        self.prices.use(price_book(config.backends))
        self.fleet = fleet
        if self.metrics is not None:
            self.metrics.follow((b.name for b in config.backends), (r.name for r in config.routes))
        if self.series is not None:
            self.series.forget_discovered({b.name for b in config.backends})

    def refused(
        self,
        error: ApiError,
        endpoint: ClientEndpoint,
        started: float,
        caller: Caller | None = None,
        route: str | None = None,
    ) -> None:
        """The gateway refused a request itself, before routing it (`started`: its arrival,
        `time.monotonic`): counted, and logged and kept as a record within
        `telemetry.refused`'s bounds. Event loop only."""
        self.refusals.refused(
            error.status,
            error.code or error.type,
            error.message,
            endpoint=endpoint,
            started=started,
            route=route,
            key_id=caller.key_id if caller is not None else None,
            team=caller.team if caller is not None else None,
        )

    def store_status(self) -> dict[str, Any]:
        return self.store.status() if self.store is not None else {"enabled": False}


def build_telemetry(config: Config, pipelines: Mapping[str, Pipeline]) -> Telemetry:
    weights = {
        route.name: {
            ws.scorer.name: ws.weight for ws in pipelines[config.profile_of(route)].scorers
        }
        for route in config.routes
    }
    prices = LivePrices(price_book(config.backends))
    mode = config.telemetry.access_log
    pipe = TelemetryPipe(config.server.log_queue_size, [] if mode == "off" else [AccessLog(mode)])
    url = resolve_url(config.store)
    refused = config.telemetry.refused
    keeps = url is not None or config.telemetry.dashboard
    refusals = Refusals(refused, pipe.emit, logs=mode != "off", samples=keeps)
    telemetry = Telemetry(pipe, refusals, prices=prices)
    if config.telemetry.prometheus:
        telemetry.metrics = GatewayMetrics(weights, prices, config.keys.max_team_labels)
        pipe.add_sink(telemetry.metrics)
    if config.telemetry.dashboard:
        telemetry.series = DashboardSeries(config.telemetry, prices, weights)
        pipe.add_sink(telemetry.series)
        telemetry.recent_refusals = RecentRefusals(refused.max_codes)
        pipe.add_sink(telemetry.recent_refusals)
        if config.cascades:
            dash = config.telemetry
            telemetry.cascades = CascadeSeries(prices, dash.window_s, dash.bucket_s)
            pipe.add_sink(telemetry.cascades)
    if url is not None:
        from gateway.store.writer import StoreWriter

        metrics = telemetry.metrics
        telemetry.store = StoreWriter(
            config.store,
            url,
            on_written=_written(metrics),
            on_dropped=_dropped(metrics),
        )
        pipe.add_sink(
            StoreSink(
                telemetry.store,
                weights,
                prices,
                keep_prompts=config.store.store_prompts,
                max_prompt_bytes=config.store.max_prompt_bytes,
            )
        )
    return telemetry


def _written(metrics: GatewayMetrics | None) -> Callable[[str, int], None]:
    def count(table: str, rows: int) -> None:
        if metrics is not None:
            metrics.store_written.labels(table).inc(rows)

    return count


def _dropped(metrics: GatewayMetrics | None) -> Callable[[str, int], None]:
    def count(table: str, rows: int) -> None:
        if metrics is not None:
            metrics.dropped.labels(f"store:{table}").inc(rows)

    return count


async def start_telemetry(
    telemetry: Telemetry,
    config: Config,
    state: FleetState,
    book: QualityBook | None,
    prober: Prober | None,
) -> None:
    """Start the store's writer, the telemetry thread and the sampler; a failure half-way
    stops what had started before it is raised."""
    try:
        await _start_parts(telemetry, config, state, book, prober)
    except BaseException:
        await stop_telemetry(telemetry)
        raise


async def _start_parts(
    telemetry: Telemetry,
    config: Config,
    state: FleetState,
    book: QualityBook | None,
    prober: Prober | None,
) -> None:
    if telemetry.store is not None:
        await telemetry.store.start()
        if book is not None:
            await _restore_quality(book, telemetry.store.url, config)
    telemetry.pipe.start()
    telemetry.follow(config, state)
    sampler = Sampler(
        lambda: telemetry.fleet or state,
        metrics=telemetry.metrics,
        book=book,
        prober=prober,
        store=telemetry.store,
        snapshot_every_s=config.store.quality_snapshot_s,
        pipe=telemetry.pipe,
        refusals=telemetry.refusals,
        connections=telemetry.connections,
        redis_up=telemetry.redis_up,
        queue_depths=lambda: telemetry.queue_depths() if telemetry.queue_depths else {},
        store_up=_store_up(telemetry.store) if telemetry.store is not None else None,
    )
    telemetry._sampler = asyncio.create_task(sampler.run(), name="telemetry-sampler")


async def _restore_quality(book: QualityBook, url: str, config: Config) -> None:
    """Start from the scores the last run saved, so a restart does not forget a bad
    backend; evidence older than four half-lives has faded to nothing anyway."""
    from gateway.store.database import DATABASE_ERRORS
    from gateway.store.reads import latest_quality

    backends = {b.name for b in config.backends}
    try:
        saved = await latest_quality(
            url,
            max_age_s=4 * config.quality.half_life_s,
            max_rows=10 * config.quality.max_pairs,
            timeout_s=config.store.connect_timeout_s,
        )
    except DATABASE_ERRORS as exc:
        logger.warning("quality scores not restored from the store: %s", type(exc).__name__)
        return
    restored = [
        s
        for s in saved
        if s.backend in backends and book.restore(s.backend, s.model, s.evidence, s.age_s)
    ]
    if restored:
        logger.info("restored quality evidence of %d backend x model pairs", len(restored))


def _store_up(store: StoreWriter) -> Callable[[], bool]:
    """Up unless the last write (or migration) failed: a worker that has not written yet
    must not pull the fleet's `livemin` gauge down."""

    def up() -> bool:
        status = store.status()
        return bool(status["up"]) or status.get("last_error") is None

    return up


async def stop_telemetry(telemetry: Telemetry) -> None:
    await cancel_and_wait(telemetry._sampler)
    telemetry.refusals.summarise(final=True)  # held-back lines are not forgotten
    # The thread hands its last records to the store before the store's final flush.
    await asyncio.to_thread(telemetry.pipe.stop)
    if telemetry.store is not None:
        await telemetry.store.stop()

"""The gateway's parts, built from a config and wired together; started and stopped as one.

Everything start-up opens (providers and the engines they start, telemetry, background
loops) is closed again if start-up fails part-way, and by `stop_gateway`.

A config reload builds the next `Gateway` from the running one (`next_generation`): the
process-wide parts (telemetry, tenancy, the decision ring, the quality book, the drain)
are shared; the config, fleet state, router, dispatcher, providers and the loops keeping
state fresh are the generation's own, with unchanged backends' state and providers carried
over. `gateway.process.runtime` swaps generations and retires the old one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from gateway.admission.controller import Admission
from gateway.config.backends import BackendConfig
from gateway.config.root import Config
from gateway.fleet.scrape.engine_scrape import EngineScraper, scrape_targets
from gateway.fleet.scrape.llama_cpp_scrape import LlamaCppScraper, llama_cpp_targets
from gateway.fleet.state import FleetState
from gateway.process.drain import Drain
from gateway.process.reload_plan import ConfigChanges, kept_cache_groups
from gateway.process.spend_wiring import account_spend
from gateway.process.sync_wiring import fleet_sync
from gateway.process.tasks import sleep_to_beat, start_task
from gateway.quality.book.quality_book import QualityBook
from gateway.quality.probes.prober import Prober
from gateway.quality.signals.passive import QualityRecorder
from gateway.routing.decisions import DecisionRing
from gateway.routing.dispatch import Dispatcher
from gateway.routing.router import Router
from gateway.telemetry.wiring import Telemetry, build_telemetry, start_telemetry, stop_telemetry
from gateway.tenancy.caller import Caller
from gateway.tenancy.wiring import Tenancy, open_tenancy, start_tenancy
from gateway.tracing.setup import start_tracing
from policies.profiles import build_pipelines
from providers.base import Provider
from providers.registry import open_provider

if TYPE_CHECKING:
    from gateway.cascade.cascades import Cascades
    from gateway.fleet.sync.redis_sync import RedisFleetSync
    from gateway.tracing.spans import Tracing

logger = logging.getLogger("switchyard")


@dataclass
class Gateway:
    config: Config
    state: FleetState
    router: Router
    dispatcher: Dispatcher
    ring: DecisionRing
    telemetry: Telemetry
    providers: dict[str, Provider]
    tenancy: Tenancy
    """Client, admin and metrics keys (never kept in clear), and the rate limiter."""
    sync: RedisFleetSync | None = None
    scraper: EngineScraper | None = None
    llama_cpp: LlamaCppScraper | None = None
    """Polls llama-server's /slots and /props for the `kind: llama-cpp` backends."""
    quality: QualityRecorder | None = None
    prober: Prober | None = None
    admission: Admission | None = None
    """This generation's flow control: its queues and their pump."""
    cascades: Cascades | None = None
    """The config's cascades (None without any)."""
    tracing: Tracing | None = None
    """OpenTelemetry traces, process-wide (None: off, and nothing of the SDK loaded)."""
    drain: Drain = field(default_factory=Drain)
    """Whether the process is shutting down, and the streams it may have to end."""
    _opened: AsyncExitStack = field(default_factory=AsyncExitStack, repr=False)
    """The process-wide parts start-up opened (telemetry, tenancy), shared by generations."""
    _loops: AsyncExitStack = field(default_factory=AsyncExitStack, repr=False)
    """This generation's loops (sync, scrapes, probes), stopped when it is superseded."""

    def authorize(self, authorization: str | None) -> Caller | None:
        """The caller, or None when client auth is off; raises when the key is wrong."""
        return self.tenancy.auth.client(authorization)

    def sync_status(self) -> dict[str, object]:
        """How this replica shares routing state (`local`: it does not)."""
        return self.sync.status() if self.sync is not None else {"sync": "local", "mode": "local"}

    def redis_up(self) -> dict[str, bool]:
        """Each use of Redis and whether it answers now: `state-sync` (`state.backend:
        redis`) and `limits` (`limits.backend: redis`); empty when nothing uses Redis."""
        uses: dict[str, bool] = {}
        if self.sync is not None:
            uses["state-sync"] = self.sync.connected or not self.sync.status()["last_error"]
        limits = self.tenancy.limiter.status()["redis"]
        if limits != "off":
            uses["limits"] = limits == "up"
        return uses

    def degraded(self) -> list[str]:
        """What is down while serving goes on, for /readyz: `store` (records wait in its
        queue), `redis:state-sync` (routing on this replica's own state), `redis:limits`
        (limits enforced per process)."""
        down = [f"redis:{use}" for use, up in self.redis_up().items() if not up]
        store = self.telemetry.store_status()
        if store["enabled"] and not store["up"] and store["last_error"] is not None:
            down.insert(0, "store")
        return down

    def may_probe(self) -> bool:
        """Whether this replica runs active probes now: always, unless replicas share a
        probe lease through Redis and another holds it."""
        return self.sync is None or self.sync.may_probe()


async def start_gateway(config: Config) -> Gateway:
    """Open a provider per backend (starting emulated engines), then telemetry and the
    background loops; if any step fails, what was opened before it is closed."""
    pipelines = build_pipelines(config.policies, config.profiles)
    state = FleetState(config.backends, config.health)
    book = QualityBook(config.quality) if config.quality.enabled else None
    router = Router(config, state, pipelines, quality=book)
    async with AsyncExitStack() as stack, AsyncExitStack() as owned, AsyncExitStack() as loops:
        tenancy = open_tenancy(config, stack)
        providers = await _open_providers(config.backends, owned)
        gateway = _assemble(
            config,
            state,
            router,
            providers,
            ring=DecisionRing(config.server.decision_ring_size),
            telemetry=build_telemetry(config, pipelines),
            tenancy=tenancy,
            quality=QualityRecorder(book, config.quality.thresholds) if book is not None else None,
        )
        _gate_probes(gateway)
        gateway.tracing = start_tracing(config.tracing, gateway.telemetry.prices.cost_usd)
        if gateway.tracing is not None:
            stack.push_async_callback(gateway.tracing.shutdown)
        account_spend(gateway.telemetry, gateway.tenancy.budgets, config)
        await _start_shared(gateway, book, stack)
        await _start_loops(gateway, loops)
        owned.pop_all()  # the providers are the generation's: `close_providers` closes them
        gateway._loops = loops.pop_all()
        gateway._opened = stack.pop_all()
    return gateway


async def stop_gateway(gateway: Gateway) -> None:
    """Refuse what is held, stop the loops, then telemetry, then close the providers
    (stopping their engines)."""
    if gateway.admission is not None:
        await gateway.admission.close()
    await gateway._loops.aclose()
    await gateway._opened.aclose()
    await close_providers(gateway.providers.values())


async def next_generation(current: Gateway, config: Config, changes: ConfigChanges) -> Gateway:
    """A gateway for `config` sharing `current`'s process-wide parts and, for the backends
    `changes` leaves unchanged, its providers and live state (load, health, prefix
    entries); its own loops started. If a step fails, what it opened is closed and
    `current` is as it was."""
    unchanged = changes.backends.unchanged
    book = current.quality.book if current.quality is not None else None
    pipelines = build_pipelines(config.policies, config.profiles)
    state = FleetState(config.backends, config.health)
    state.carry_over(current.state, unchanged)
    router = Router(config, state, pipelines, quality=book)
    router.index.carry_over(
        current.router.index, kept_cache_groups(current.config, config, unchanged)
    )
    async with AsyncExitStack() as owned, AsyncExitStack() as loops:
        kept = {name: current.providers[name] for name in unchanged}
        added = [b for b in config.backends if b.name not in kept]
        opened = await _open_providers(added, owned)
        providers = {b.name: kept.get(b.name) or opened[b.name] for b in config.backends}
        gateway = _assemble(
            config,
            state,
            router,
            providers,
            ring=current.ring,
            telemetry=current.telemetry,
            tenancy=current.tenancy,
            quality=current.quality,
        )
        gateway.drain, gateway._opened = current.drain, current._opened
        gateway.tracing = current.tracing
        _carry_learned(current, gateway)
        _gate_probes(gateway)
        await _start_loops(gateway, loops)
        owned.pop_all()
        gateway._loops = loops.pop_all()
    # Started: from now on records are priced at this config's prices, the gauges read this
    # generation's fleet, and new keys may name its routes.
    current.telemetry.follow(config, gateway.state)
    current.tenancy.follow(config)
    if book is not None:  # a removed backend's evidence goes with its state
        book.forget(frozenset(changes.backends.removed))
    return gateway


def _carry_learned(current: Gateway, new: Gateway) -> None:
    """Tenants' service and cascades' books outlive a reload that keeps their settings:
    fairness and learned starting tiers do not restart from nothing with every change."""
    if current.cascades is not None and new.cascades is not None:
        new.cascades.carry_over(current.cascades)
    old, admission = current.admission, new.admission
    if old is None or admission is None:
        return
    if current.config.flow_control.tenants == new.config.flow_control.tenants:
        admission.ledger.carry_over(old.ledger)


async def stop_loops(gateway: Gateway) -> None:
    """Stop a superseded generation's loops; its requests may still be finishing."""
    await gateway._loops.aclose()


async def close_providers(providers: Iterable[Provider]) -> None:
    """Close each provider (stopping an emulated engine), all even when one fails."""
    results = await asyncio.gather(*(p.close() for p in providers), return_exceptions=True)
    for failure in results:
        if isinstance(failure, BaseException):
            logger.warning("closing a provider failed: %s", type(failure).__name__)


def _gate_probes(gateway: Gateway) -> None:
    if gateway.prober is not None:
        gateway.prober.gate = gateway.may_probe
    gateway.telemetry.redis_up = gateway.redis_up
    if gateway.admission is not None:
        gateway.telemetry.queue_depths = gateway.admission.queue_depths


def _assemble(
    config: Config,
    state: FleetState,
    router: Router,
    providers: dict[str, Provider],
    *,
    ring: DecisionRing,
    telemetry: Telemetry,
    tenancy: Tenancy,
    quality: QualityRecorder | None,
) -> Gateway:
    """A generation's parts around the given state and providers; nothing started yet."""
    book = quality.book if quality is not None else None
    base_urls = {n: p.base_url for n, p in providers.items()}
    targets = scrape_targets(config.backends, base_urls)
    llama_targets = llama_cpp_targets(config.backends, base_urls)
    admission = Admission(config.flow_control, state)
    return Gateway(
        config=config,
        state=state,
        router=router,
        dispatcher=Dispatcher(config, state, providers, prefixes=router),
        ring=ring,
        telemetry=telemetry,
        providers=providers,
        tenancy=tenancy,
        sync=fleet_sync(config, state, router, book, admission),
        scraper=EngineScraper(targets, state) if targets else None,
        llama_cpp=LlamaCppScraper(llama_targets, state) if llama_targets else None,
        quality=quality,
        prober=_prober(config, book, providers) if book is not None else None,
        admission=admission,
        cascades=_cascades(config),
    )


def _cascades(config: Config) -> Cascades | None:
    if not config.cascades:
        return None
    from gateway.cascade.cascades import Cascades  # its checks load only where configured

    return Cascades(config.cascades)


async def _open_providers(
    backends: Iterable[BackendConfig], stack: AsyncExitStack
) -> dict[str, Provider]:
    """A provider per backend, in config order, each closed when `stack` closes."""
    providers: dict[str, Provider] = {}
    for backend in backends:
        provider = await open_provider(backend.provider_settings())
        stack.push_async_callback(provider.close)
        providers[backend.name] = provider
    return providers


class _Background(Protocol):
    """A part that runs its own loop: started at once, stopped by awaiting `stop()`."""

    def start(self) -> None: ...

    async def stop(self) -> None: ...


async def _start_shared(gateway: Gateway, book: QualityBook | None, stack: AsyncExitStack) -> None:
    """Telemetry, tenancy and the quality book's refresh, each stopped when `stack` closes."""
    await start_telemetry(gateway.telemetry, gateway.config, gateway.state, book, gateway.prober)
    stack.push_async_callback(stop_telemetry, gateway.telemetry)
    await start_tenancy(gateway.tenancy, stack)  # after the store's migration
    if book is not None:
        start_task(stack, _refresh_quality(book), name="quality-refresh")


async def _start_loops(gateway: Gateway, stack: AsyncExitStack) -> None:
    """The generation's loops that keep state fresh, each stopped when `stack` closes."""
    parts: tuple[_Background | None, ...] = (
        gateway.sync,
        gateway.scraper,
        gateway.llama_cpp,
        gateway.prober,
    )
    for part in parts:
        if part is not None:
            part.start()
            stack.push_async_callback(part.stop)
    if gateway.config.health.active_probes:
        start_task(stack, _probe_forever(gateway), name="health-probes")


async def _refresh_quality(book: QualityBook) -> None:
    """Back-offs end, evidence decays and history is sampled even without traffic."""
    while True:
        await sleep_to_beat(1.0)
        try:
            book.refresh()
        except Exception:  # scores are optional; the loop must outlive a bug
            logger.exception("quality refresh failed")


def _prober(config: Config, book: QualityBook, providers: dict[str, Provider]) -> Prober | None:
    """Probes for every (backend, model) a route serves, each backend with its settings."""
    configs = {b.name: b.probes or config.quality.probes for b in config.backends}
    targets = [(m.backend, m.model) for route in config.routes for m in route.members]
    prober = Prober(configs, book, providers, targets)
    return prober if prober.targets else None


async def probe_once(gateway: Gateway) -> None:
    timeout = gateway.config.health.probe_timeout_s

    async def probe(name: str, provider: Provider) -> None:
        result = await provider.health(timeout)
        gateway.state.record_probe(name, result.healthy, result.reason)

    await asyncio.gather(*(probe(n, p) for n, p in gateway.providers.items()))


async def _probe_forever(gateway: Gateway) -> None:
    interval = gateway.config.health.probe_interval_s
    while True:
        if gateway.may_probe():
            await probe_once(gateway)
        await sleep_to_beat(interval)

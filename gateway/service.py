"""The gateway's parts, built from a config and wired together; started and stopped as one.

Everything start-up opens (providers and the engines they start, telemetry, background
loops) goes on one exit stack: a failure part-way closes what was already open, and
`stop_gateway` closes it all in reverse order.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Protocol

from gateway.config import Config
from gateway.decisions import DecisionRing
from gateway.dispatch import Dispatcher
from gateway.fleet.engine_scrape import EngineScraper, scrape_targets
from gateway.fleet.llama_cpp_scrape import LlamaCppScraper, llama_cpp_targets
from gateway.fleet.state import FleetState
from gateway.fleet.sync import RedisFleetSync
from gateway.quality.book import QualityBook
from gateway.quality.passive import QualityRecorder
from gateway.quality.prober import Prober
from gateway.routing import Router
from gateway.tasks import start_task
from gateway.telemetry.wiring import Telemetry, build_telemetry, start_telemetry, stop_telemetry
from gateway.tenancy.caller import Caller
from gateway.tenancy.wiring import Tenancy, open_tenancy, start_tenancy
from policies import build_pipelines
from providers import Provider, open_provider

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
    _opened: AsyncExitStack = field(default_factory=AsyncExitStack, repr=False)
    """What start-up opened, closed by `stop_gateway`."""

    def authorize(self, authorization: str | None) -> Caller | None:
        """The caller, or None when client auth is off; raises when the key is wrong."""
        return self.tenancy.auth.client(authorization)

    def sync_status(self) -> dict[str, object]:
        """How this replica shares routing state (`local`: it does not)."""
        return self.sync.status() if self.sync is not None else {"sync": "local"}


async def start_gateway(config: Config) -> Gateway:
    """Open a provider per backend (starting emulated engines), then telemetry and the
    background loops; if any step fails, what was opened before it is closed."""
    pipelines = build_pipelines(config.policies, config.profiles)
    state = FleetState(config.backends, config.health)
    book = QualityBook(config.quality) if config.quality.enabled else None
    router = Router(config, state, pipelines, quality=book)
    async with AsyncExitStack() as stack:
        tenancy = open_tenancy(config, stack)
        providers = await _open_providers(config, stack)
        base_urls = {n: p.base_url for n, p in providers.items()}
        targets = scrape_targets(config.backends, base_urls)
        llama_targets = llama_cpp_targets(config.backends, base_urls)
        gateway = Gateway(
            config=config,
            state=state,
            router=router,
            dispatcher=Dispatcher(config, state, providers, prefixes=router),
            ring=DecisionRing(config.server.decision_ring_size),
            telemetry=build_telemetry(config, pipelines),
            providers=providers,
            tenancy=tenancy,
            sync=_fleet_sync(config, state, router),
            scraper=EngineScraper(targets, state) if targets else None,
            llama_cpp=LlamaCppScraper(llama_targets, state) if llama_targets else None,
            quality=QualityRecorder(book, config.quality.thresholds) if book is not None else None,
            prober=_prober(config, book, providers) if book is not None else None,
        )
        await _start_background(gateway, book, stack)
        gateway._opened = stack.pop_all()
    return gateway


async def stop_gateway(gateway: Gateway) -> None:
    """Stop the loops, then telemetry, then close the providers (stopping their engines)."""
    await gateway._opened.aclose()


async def _open_providers(config: Config, stack: AsyncExitStack) -> dict[str, Provider]:
    """A provider per backend, in config order, each closed when `stack` closes."""
    providers: dict[str, Provider] = {}
    for backend in config.backends:
        provider = await open_provider(backend.provider_settings())
        stack.push_async_callback(provider.close)
        providers[backend.name] = provider
    return providers


class _Background(Protocol):
    """A part that runs its own loop: started at once, stopped by awaiting `stop()`."""

    def start(self) -> None: ...

    async def stop(self) -> None: ...


async def _start_background(
    gateway: Gateway, book: QualityBook | None, stack: AsyncExitStack
) -> None:
    """Telemetry, then the loops that keep state fresh, each stopped when `stack` closes."""
    await start_telemetry(gateway.telemetry, gateway.config, gateway.state, book, gateway.prober)
    stack.push_async_callback(stop_telemetry, gateway.telemetry)
    await start_tenancy(gateway.tenancy, stack)  # after the store's migration
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
    if book is not None:
        start_task(stack, _refresh_quality(book), name="quality-refresh")
    if gateway.config.health.active_probes:
        start_task(stack, _probe_forever(gateway), name="health-probes")


async def _refresh_quality(book: QualityBook) -> None:
    """Back-offs end, evidence decays and history is sampled even without traffic."""
    while True:
        await asyncio.sleep(1.0)
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


def _fleet_sync(config: Config, state: FleetState, router: Router) -> RedisFleetSync | None:
    """With `state.backend: redis`, share prefix inserts and load with other replicas."""
    if config.state.backend != "redis":
        return None
    sync = RedisFleetSync(config.state, state, router.index)
    router.on_insert = sync.enqueue
    return sync


async def probe_once(gateway: Gateway) -> None:
    timeout = gateway.config.health.probe_timeout_s

    async def probe(name: str, provider: Provider) -> None:
        result = await provider.health(timeout)
        gateway.state.record_probe(name, result.healthy, result.reason)

    await asyncio.gather(*(probe(n, p) for n, p in gateway.providers.items()))


async def _probe_forever(gateway: Gateway) -> None:
    interval = gateway.config.health.probe_interval_s
    while True:
        await probe_once(gateway)
        await asyncio.sleep(interval)

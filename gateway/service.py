"""The gateway's parts, built from a config and wired together; started and stopped as one."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from emulator import EmulatorServer, EmulatorSettings
from gateway.backend_config import BackendConfig
from gateway.config import Config, ConfigError
from gateway.decisions import DecisionRing
from gateway.dispatch import Dispatcher
from gateway.errors import Unauthorized
from gateway.fleet.engine_scrape import EngineScraper, scrape_targets
from gateway.fleet.state import FleetState
from gateway.fleet.sync import RedisFleetSync
from gateway.quality.book import QualityBook
from gateway.quality.passive import QualityRecorder
from gateway.quality.prober import Prober
from gateway.routing import Router
from gateway.telemetry.wiring import Telemetry, build_telemetry, start_telemetry, stop_telemetry
from policies import build_pipelines
from providers import Provider, build_provider

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
    emulators: list[EmulatorServer] = field(default_factory=list)
    client_keys: Mapping[str, str] = field(default_factory=dict)
    """Each accepted client key -> its short id for records (the key itself is never kept
    anywhere else)."""
    sync: RedisFleetSync | None = None
    scraper: EngineScraper | None = None
    quality: QualityRecorder | None = None
    prober: Prober | None = None
    _quality_task: asyncio.Task[None] | None = None
    _probe_task: asyncio.Task[None] | None = None

    def authorize(self, authorization: str | None) -> str | None:
        """The caller's key id, or None when auth is off; raises when the key is wrong."""
        if not self.client_keys:
            return None
        scheme, _, token = (authorization or "").partition(" ")
        key_id = self.client_keys.get(token.strip()) if scheme.lower() == "bearer" else None
        if key_id is None:
            raise Unauthorized("missing or invalid API key for this gateway")
        return key_id

    def sync_status(self) -> dict[str, object]:
        """How this replica shares routing state (`local`: it does not)."""
        return self.sync.status() if self.sync is not None else {"sync": "local"}


async def start_gateway(config: Config) -> Gateway:
    """Start emulated engines, open provider pools and the log writer."""
    keys = client_keys(config.server.api_keys_env)
    pipelines = build_pipelines(config)
    state = FleetState(config.backends, config.health)
    book = QualityBook(config.quality) if config.quality.enabled else None
    router = Router(config, state, pipelines, quality=book)
    sync = _fleet_sync(config, state, router)
    providers, emulators, base_urls = await _open_backends(config)
    targets = scrape_targets(config.backends, base_urls)
    telemetry = build_telemetry(config, pipelines)
    gateway = Gateway(
        config=config,
        state=state,
        router=router,
        dispatcher=Dispatcher(config, state, providers, on_dispatch=router.remember),
        ring=DecisionRing(config.server.decision_ring_size),
        telemetry=telemetry,
        providers=providers,
        emulators=emulators,
        client_keys={key: key_id(key) for key in keys},
        sync=sync,
        scraper=EngineScraper(targets, state) if targets else None,
        quality=QualityRecorder(book, config.quality.thresholds) if book is not None else None,
        prober=_prober(config, book, providers) if book is not None else None,
    )
    await start_telemetry(telemetry, config, state, book, gateway.prober)
    if sync is not None:
        sync.start()
    if gateway.scraper is not None:
        gateway.scraper.start()
    if gateway.prober is not None:
        gateway.prober.start()
    if gateway.quality is not None:
        gateway._quality_task = asyncio.create_task(
            _refresh_quality(gateway.quality.book), name="quality-refresh"
        )
    if config.health.active_probes:
        gateway._probe_task = asyncio.create_task(_probe_forever(gateway), name="health-probes")
    return gateway


async def stop_gateway(gateway: Gateway) -> None:
    if gateway.sync is not None:
        await gateway.sync.stop()
    if gateway._probe_task is not None:
        gateway._probe_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await gateway._probe_task
    if gateway.scraper is not None:
        await gateway.scraper.stop()
    if gateway.prober is not None:
        await gateway.prober.stop()
    if gateway._quality_task is not None:
        gateway._quality_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await gateway._quality_task
    await _close_all(gateway.providers, gateway.emulators)
    await stop_telemetry(gateway.telemetry)


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
    targets = [(name, route.model) for route in config.routes for name in route.backends]
    prober = Prober(configs, book, providers, targets)
    return prober if prober.targets else None


def _fleet_sync(config: Config, state: FleetState, router: Router) -> RedisFleetSync | None:
    """With `state.backend: redis`, share prefix inserts and load with other replicas."""
    if config.state.backend != "redis":
        return None
    sync = RedisFleetSync(config.state, state, router.index)
    router.on_insert = sync.enqueue
    return sync


async def _open_backends(
    config: Config,
) -> tuple[dict[str, Provider], list[EmulatorServer], dict[str, str]]:
    """A provider per backend, emulated engines started; and each backend's base URL."""
    emulators: list[EmulatorServer] = []
    providers: dict[str, Provider] = {}
    base_urls: dict[str, str] = {}
    try:
        for backend in config.backends:
            base_url = backend.base_url or await _start_emulator(backend, emulators)
            base_urls[backend.name] = base_url
            providers[backend.name] = build_provider(backend, base_url)
    except BaseException:
        await _close_all(providers, emulators)
        raise
    return providers, emulators, base_urls


async def _start_emulator(backend: BackendConfig, emulators: list[EmulatorServer]) -> str:
    options = backend.emulator
    settings = EmulatorSettings(
        models=list(backend.models),
        **(options.model_dump() if options else {}),
    )
    server = EmulatorServer(settings, host="127.0.0.1", port=0)
    await server.start()
    emulators.append(server)
    logger.info("emulated engine %s listening on %s", backend.name, server.base_url)
    return server.base_url


async def _close_all(providers: dict[str, Provider], emulators: list[EmulatorServer]) -> None:
    for provider in providers.values():
        await provider.close()
    for server in emulators:
        await server.stop()


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


def key_id(key: str) -> str:
    """A short id that tells keys apart in records without revealing them."""
    return hashlib.blake2b(key.encode(), digest_size=6, person=b"switchyard-key").hexdigest()


def client_keys(env_name: str | None) -> frozenset[str]:
    """The keys clients must present; empty when auth is off."""
    if not env_name:
        return frozenset()
    keys = frozenset(k.strip() for k in os.environ.get(env_name, "").split(",") if k.strip())
    if not keys:
        # Failing open would silently expose every backend; refuse to start instead.
        raise ConfigError("environment", [f"server.api_keys_env: {env_name} is unset or empty"])
    return keys

"""Shared fixtures: real servers on loopback (emulated engines, the gateway) and clean-up."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from emulator.loopback import LoopbackServer
from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings
from gateway.config.root import Config, parse_config
from gateway.http.app import create_app
from gateway.http.server import client_options
from gateway.process.runtime import Runtime
from gateway.process.service import Gateway

# A developer's (or CI's) SWITCHYARD_DATABASE_URL must not send every test gateway's records
# to that database: the store's PostgreSQL tests use it as their server, nothing else does.
DATABASE_URL_FOR_TESTS = os.environ.pop("SWITCHYARD_DATABASE_URL", None)
# Likewise, in-process test gateways keep their metrics in their own registries.
os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)

StartEmulator = Callable[..., Awaitable[EmulatorServer]]
StartGateway = Callable[[dict[str, Any]], Awaitable["RunningGateway"]]


class RunningGateway:
    def __init__(self, server: LoopbackServer, gateway: Gateway, runtime: Runtime) -> None:
        self.server = server
        self.gateway = gateway
        """The first generation; `runtime.current` is the one serving now."""
        self.runtime = runtime
        self.url = server.url
        self.client = httpx.AsyncClient(base_url=server.url, timeout=30)

    async def close(self) -> None:
        await self.client.aclose()
        await self.server.stop()


@pytest.fixture
async def start_emulator() -> AsyncIterator[StartEmulator]:
    """Start emulated engines; stop them after. Unless given, the token delay is 0 and
    answers run to exactly max_tokens (``ignore_eos``): the tests count tokens and chunks;
    those about answers that end on their own ask for ``ignore_eos=False``."""
    started: list[EmulatorServer] = []

    async def start(**settings: Any) -> EmulatorServer:
        settings.setdefault("token_delay_ms", 0.0)
        settings.setdefault("ignore_eos", True)
        server = EmulatorServer(EmulatorSettings(**settings), host="127.0.0.1", port=0)
        await server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()


@pytest.fixture
async def start_gateway() -> AsyncIterator[StartGateway]:
    running: list[RunningGateway] = []

    async def start(config: dict[str, Any]) -> RunningGateway:
        parsed = parse_config(config)
        app = create_app(parsed)
        server = LoopbackServer(
            app,
            lifespan="on",
            keep_alive_s=parsed.server.keep_alive_s,
            http=served_protocol(parsed),
        )
        await server.start()
        gw = RunningGateway(server, app.state.gateway, app.state.runtime)
        running.append(gw)
        return gw

    yield start
    for gw in running:
        await gw.close()


def served_protocol(config: Config) -> type[asyncio.Protocol] | None:
    """The protocol `switchyard serve` serves connections with (the bounded one)."""
    protocol = client_options(config.server.clients).get("http")
    return protocol if isinstance(protocol, type) else None


def make_config(
    backends: dict[str, str],
    *,
    model: str = "emulated-model",
    profile: list[dict[str, Any]] | None = None,
    **sections: Any,
) -> dict[str, Any]:
    """A config dict: one route `default` over the given backends (name -> base_url)."""
    config: dict[str, Any] = {
        "backends": [
            {"name": name, "base_url": url, "models": [model]} for name, url in backends.items()
        ],
        "routes": [{"name": "default", "model": model, "backends": list(backends)}],
        "profiles": [
            {
                "name": "balanced",
                "plugins": profile
                or [
                    {"ref": "healthy-filter"},
                    {"ref": "round-robin-scorer"},
                    {"ref": "max-score-picker"},
                ],
            }
        ],
        # Dispatch tests need failures to reach the dispatcher, not the prober.
        "health": {"active_probes": False},
    }
    config.update(sections)
    return config


def parsed(config: dict[str, Any]) -> Config:
    return parse_config(config)


@pytest.fixture
async def virtual_time() -> AsyncIterator[None]:
    """The event loop's clock stands still while code runs and skips ahead to the next
    timer whenever nothing is ready: `asyncio.sleep`, timeouts and `loop.time()` follow it,
    so a test of schedules and deadlines takes no real time and sees exact times. Only for
    tests without real I/O or threads, whose waits it would skip too. (The idea of
    aiotools' VirtualClock, on the loop's selector.)"""
    loop = asyncio.get_running_loop()
    selector = getattr(loop, "_selector", None)
    if selector is None:
        pytest.skip("virtual time needs a selector event loop")
    select, now = selector.select, loop.time()

    def skipping_select(timeout: float | None = None) -> Any:
        nonlocal now
        ready = select(0)
        if not ready and timeout:
            now += timeout  # the loop asked to wait this long for the next timer
        return ready

    loop.time = lambda: now  # type: ignore[method-assign]
    selector.select = skipping_select
    try:
        yield
    finally:
        selector.select = select
        del loop.time


def until(check: Callable[[], object], what: str, within_s: float = 20.0) -> None:
    """`eventually` for blocking code (threads, processes): wait until `check()` holds;
    fail naming `what` after `within_s`."""
    deadline = time.monotonic() + within_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within_s}s: {what}")
        time.sleep(0.05)


async def eventually(
    check: Callable[[], Awaitable[bool]], what: str, within_s: float = 5.0
) -> None:
    """Wait until `check()` holds; fail naming `what` after `within_s`."""
    deadline = time.monotonic() + within_s
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within_s}s: {what}")
        await asyncio.sleep(0.01)

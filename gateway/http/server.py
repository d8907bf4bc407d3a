"""uvicorn's server with a one-second tick: an idle gateway sleeps instead of polling.

uvicorn's main loop wakes ten times a second, to refresh the `date` header (once a second)
and to see whether a signal asked it to stop. On this project's shared VMs a wake from idle
costs ~0.2 ms of CPU (caches and the vCPU cold again), so those wakes were most of an idle
gateway's CPU (under traffic the loop is awake anyway and a tick costs only its own few
microseconds: per request and per chunk this changed nothing measurable). `QuietServer`
ticks once a second, on the beat the gateway's other one-second loops keep
(`gateway.process.tasks.sleep_to_beat`), which keeps the header's one-second resolution, and is
woken at once when `should_exit` is set, so stopping is as quick as before.

`serve` runs one process on it; `--workers` N keeps uvicorn's own server in each worker
(its supervisor builds them). Either way connections are served by the bounded httptools
protocol (`gateway.http.bounded_protocol`, `client_options`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import logging
import sys
from typing import TYPE_CHECKING

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from gateway.process.tasks import beat_delay

if TYPE_CHECKING:
    from gateway.config.clients import ClientsConfig

TICK_S = 1.0
"""Between two of uvicorn's ticks (the date header, the request limit, the exit check)."""


logger = logging.getLogger("switchyard")


class QuietServer(uvicorn.Server):
    """`uvicorn.Server`, ticking every `TICK_S` and woken early by `should_exit`."""

    def __init__(self, config: uvicorn.Config) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._exit = False
        super().__init__(config)

    @property
    def should_exit(self) -> bool:
        return self._exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        # Set by uvicorn's signal handler (or a test): wake the main loop now, not at the
        # next tick. call_soon_threadsafe also wakes a loop blocked in its poll.
        self._exit = value
        loop, waiter = self._loop, self._waiter
        if value and loop is not None and waiter is not None and not loop.is_closed():
            loop.call_soon_threadsafe(_release, waiter)

    async def main_loop(self) -> None:
        self._loop = loop = asyncio.get_running_loop()
        counter = 0
        try:
            while not await self.on_tick(counter):
                # on_tick refreshes the date header when counter % 10 == 0: every tick here.
                counter = (counter + 10) % 864_000
                self._waiter = waiter = loop.create_future()
                if self._exit:  # set between the check above and the waiter
                    break
                timer = loop.call_later(beat_delay(loop.time(), TICK_S), _release, waiter)
                try:
                    await waiter
                finally:
                    timer.cancel()
        finally:
            self._waiter = None
            self._loop = None


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


_HOOKS = ("main_loop", "on_tick")


def quiet_supported() -> bool:
    """Whether the installed uvicorn has the hooks `QuietServer` overrides (0.29 to 0.55
    do); another keeps its own ten-a-second tick rather than fail to serve."""
    server = uvicorn.Server
    return all(inspect.iscoroutinefunction(getattr(server, hook, None)) for hook in _HOOKS)


def run(app: object, options: dict[str, object]) -> None:
    """`uvicorn.run(app, **options)` for one process, on `QuietServer`."""
    config = uvicorn.Config(app, **options)  # type: ignore[arg-type]
    warn_unless_spliced(config)
    warn_unless_bounded(config)
    server = QuietServer(config) if quiet_supported() else uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)


def warn_unless_spliced(config: uvicorn.Config) -> None:
    """Say once, at start-up, when streams cannot be spliced (`gateway.http.relay.splice`):
    another HTTP protocol than httptools, or a uvicorn whose internals moved."""
    from gateway.http.relay.splice import splice_supported

    http = config.http if isinstance(config.http, str) else "custom"
    httptools = http == "httptools" or (http == "auto" and _httptools_installed())
    httptools = httptools or _bounded(config.http)
    if not (httptools and splice_supported()):
        logger.warning(
            "streams are relayed through ASGI, not spliced (http=%s, uvicorn %s): "
            "correct, with more CPU per chunk",
            http,
            uvicorn.__version__,
        )


def client_options(clients: ClientsConfig) -> dict[str, object]:
    """uvicorn options that apply `server.clients`: the bounded httptools protocol; where
    it cannot run (no httptools, a uvicorn whose internals moved), uvicorn's own protocol
    with `limit_concurrency` at `max_connections`, which at least caps what a process
    takes on (it refuses requests, with 503, not connections), and no read timeouts."""
    if _httptools_installed():
        from gateway.http.bounded_protocol import BoundedHttpToolsProtocol, bounded_supported

        if bounded_supported():
            return {"http": BoundedHttpToolsProtocol}
    return {"limit_concurrency": clients.max_connections}


def warn_unless_bounded(config: uvicorn.Config) -> None:
    """Say once, at start-up, when `client_options` had to fall back."""
    if not _bounded(config.http):
        logger.warning(
            "client connections are not bounded in time (http=%s, uvicorn %s): a client "
            "that sends its request slowly keeps its connection; "
            "server.clients.max_connections caps requests, not connections",
            config.http if isinstance(config.http, str) else "custom",
            uvicorn.__version__,
        )


def _bounded(http: object) -> bool:
    """Whether uvicorn's `http` option is the bounded httptools protocol (or its kin)."""
    if not isinstance(http, type) or not _httptools_installed():
        return False
    from gateway.http.bounded_protocol import BoundedHttpToolsProtocol

    return issubclass(http, BoundedHttpToolsProtocol)


def _httptools_installed() -> bool:
    return importlib.util.find_spec("httptools") is not None

"""In-process emulator: a uvicorn server running as a task inside the caller's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Generator
from types import TracebackType

import uvicorn

from gateway.emulator.app import create_app
from gateway.emulator.runtime_state import EmulatorRuntime
from gateway.emulator.settings import EmulatorSettings

_GRACEFUL_SHUTDOWN_S = 2
_STOP_TIMEOUT_S = 5.0
_STARTUP_POLL_S = 0.005


class _EmbeddedUvicorn(uvicorn.Server):
    """Leaves signals to the host: the emulator runs inside another server's event loop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class EmulatorServer:
    """An emulated OpenAI-compatible engine served on loopback from the current event loop.

    ``port=0`` binds a free port; read the real one from ``.port`` or ``.base_url``
    after ``start()``. Faults and counters are live on ``.runtime``.
    """

    def __init__(
        self, settings: EmulatorSettings | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.host = loopback_host(host)
        self.settings = settings or EmulatorSettings()
        self.runtime = EmulatorRuntime(self.settings)
        self._requested_port = port
        self._port: int | None = None
        self._server: _EmbeddedUvicorn | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("EmulatorServer is not started")
        return self._port

    @property
    def base_url(self) -> str:
        """OpenAI base URL, ending in ``/v1``."""
        return f"{http_origin(self.host, self.port)}/v1"

    async def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("EmulatorServer is already started")
        sock = bind_loopback(self.host, self._requested_port)
        config = uvicorn.Config(
            create_app(self.runtime),
            # No log_config / log_level / access_log=False: each of those rewrites the
            # process-wide uvicorn loggers, which belong to the host server.
            log_config=None,
            lifespan="off",
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_S,
        )
        self._server = _EmbeddedUvicorn(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        try:
            await wait_until_started(self._server, self._task)
        except BaseException:
            sock.close()
            self._task = self._server = None
            raise
        self._port = int(sock.getsockname()[1])

    async def stop(self) -> None:
        """Stop gracefully (in-flight responses get a moment to finish), then cancel."""
        task, server = self._task, self._server
        if task is None or server is None:
            return
        self._task = self._server = None
        server.should_exit = True
        done, _ = await asyncio.wait((task,), timeout=_STOP_TIMEOUT_S)
        if not done:
            task.cancel()
            await asyncio.wait((task,))
        elif not task.cancelled():
            task.result()

    async def __aenter__(self) -> EmulatorServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()


async def wait_until_started(server: uvicorn.Server, task: asyncio.Task[None]) -> None:
    """Return once ``server`` accepts connections; re-raise if it died first."""
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("emulator server exited during start-up")
        await asyncio.sleep(_STARTUP_POLL_S)


def loopback_host(host: str) -> str:
    """``host`` if it is a loopback address ("localhost" means 127.0.0.1); else ValueError."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        is_loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        is_loopback = False
    if not is_loopback:
        raise ValueError(f"the emulator binds loopback addresses only, not {host!r}")
    return host


def bind_loopback(host: str, port: int) -> socket.socket:
    """A bound socket; binding here (not in uvicorn) turns errors into OSError, not exit."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must be explicit: asyncio enables TCP_NODELAY only on sockets it sees as TCP,
    # and without it every two-write response stalls ~40 ms on delayed ACKs.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def http_origin(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

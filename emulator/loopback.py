"""Serve an ASGI app on a loopback port from the current event loop (tests, embedded engines)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Generator
from typing import Literal

import uvicorn
from starlette.types import ASGIApp

_GRACEFUL_SHUTDOWN_S = 2
_STOP_TIMEOUT_S = 5.0
_STARTUP_POLL_S = 0.005


class _NestedUvicorn(uvicorn.Server):
    """Leaves signals to the host process: this server runs inside another's event loop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class LoopbackServer:
    """A uvicorn server bound to loopback only; `port=0` picks a free port.

    The socket is bound here rather than by uvicorn, so a busy port is an OSError
    instead of uvicorn calling sys.exit inside the host's loop.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        lifespan: Literal["auto", "on", "off"] = "auto",
        keep_alive_s: int = 5,
        http: type[asyncio.Protocol] | None = None,
    ) -> None:
        """`keep_alive_s`: how long idle client connections stay open (uvicorn's default 5 s
        for engines; a gateway passes its `server.keep_alive_s`). `http`: the protocol
        class connections are served by (None: uvicorn's choice)."""
        self.host = loopback_host(host)
        self._keep_alive_s = keep_alive_s
        self._http = http
        self._app = app
        self._requested_port = port
        self._lifespan: Literal["auto", "on", "off"] = lifespan
        self._port: int | None = None
        self._server: _NestedUvicorn | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server is not started")
        return self._port

    @property
    def url(self) -> str:
        return http_origin(self.host, self.port)

    async def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("server is already started")
        sock = bind_loopback(self.host, self._requested_port)
        config = uvicorn.Config(
            self._app,
            # No log_config / log_level / access_log: each rewrites the process-wide
            # uvicorn loggers, which belong to the host.
            log_config=None,
            lifespan=self._lifespan,
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_S,
            timeout_keep_alive=self._keep_alive_s,
            http=self._http or "auto",
        )
        self._server = _NestedUvicorn(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        try:
            await wait_until_started(self._server, self._task)
        except BaseException:
            sock.close()
            self._task = self._server = None
            raise
        self._port = int(sock.getsockname()[1])

    async def stop(self) -> None:
        """Stop gracefully (responses in flight get a moment to finish), then cancel."""
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


async def wait_until_started(server: uvicorn.Server, task: asyncio.Task[None]) -> None:
    """Return once `server` accepts connections; re-raise if it died first."""
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("server exited during start-up")
        await asyncio.sleep(_STARTUP_POLL_S)


def loopback_host(host: str) -> str:
    """`host` if it is a loopback address ("localhost" means 127.0.0.1); else ValueError."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        is_loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        is_loopback = False
    if not is_loopback:
        raise ValueError(f"in-process servers bind loopback addresses only, not {host!r}")
    return host


def bind_loopback(host: str, port: int) -> socket.socket:
    """A bound TCP socket. IPPROTO_TCP matters: without it asyncio skips TCP_NODELAY."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
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

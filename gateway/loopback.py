"""Run an ASGI app on a loopback port inside the current event loop (tests, embedded engines)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Literal

import uvicorn
from starlette.types import ASGIApp

_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


class LoopbackServer:
    """A uvicorn server bound to loopback only; `port=0` picks a free port."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        lifespan: Literal["auto", "on", "off"] = "auto",
    ) -> None:
        if host not in _LOOPBACK:
            raise ValueError(f"refusing to bind {host}: in-process servers stay on loopback")
        self._host = host
        self._socket = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan=lifespan,
            loop="none",
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self.port}"

    async def start(self) -> None:
        # Signals belong to the host process, not to a server nested inside it.
        self._server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
        self._task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        while not self._server.started:
            if self._task.done():
                await self._task
                raise RuntimeError("server exited during start-up")
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        if self._task is None:
            return
        self._server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout=5)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None
        self._socket.close()

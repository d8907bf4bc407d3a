"""Several independent emulated engines in one process, on consecutive loopback ports."""

from __future__ import annotations

import asyncio
from types import TracebackType

from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings

_MAX_PORT = 65535


class EmulatorFleet:
    """``size`` engines, each with its own runtime, KV cache and scheduler.

    With ``port=0`` each engine binds a free port; otherwise engine ``i`` binds
    ``port + i``. Starting is all or nothing: engines already started are stopped if
    one fails to bind.
    """

    def __init__(
        self,
        size: int,
        settings: EmulatorSettings | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if size < 1:
            raise ValueError("a fleet has at least one engine")
        if port and port + size - 1 > _MAX_PORT:
            raise ValueError(f"ports {port}..{port + size - 1} run past {_MAX_PORT}")
        self.settings = settings or EmulatorSettings()
        self.servers = [
            EmulatorServer(self.settings, host=host, port=port + index if port else 0)
            for index in range(size)
        ]

    @property
    def base_urls(self) -> list[str]:
        """OpenAI base URLs, ending in ``/v1``, in engine order."""
        return [server.base_url for server in self.servers]

    async def start(self) -> None:
        try:
            for server in self.servers:
                await server.start()
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        # Together: each may wait its graceful-shutdown period for open streams.
        await asyncio.gather(*(server.stop() for server in self.servers))

    async def __aenter__(self) -> EmulatorFleet:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

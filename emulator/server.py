"""In-process emulator: an emulated engine served on loopback from the caller's event loop."""

from __future__ import annotations

from types import TracebackType

from emulator.app import create_app
from emulator.engine.runtime_state import EmulatorRuntime
from emulator.loopback import LoopbackServer
from emulator.settings import EmulatorSettings


class EmulatorServer:
    """An emulated engine on loopback, speaking OpenAI's, Anthropic's and Gemini's formats.

    ``port=0`` binds a free port; read the real one from ``.port`` or ``.base_url``
    after ``start()``. Faults and counters are live on ``.runtime``.
    """

    def __init__(
        self, settings: EmulatorSettings | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.settings = settings or EmulatorSettings()
        self.runtime = EmulatorRuntime(self.settings)
        self._server = LoopbackServer(
            create_app(self.runtime), host=host, port=port, lifespan="off"
        )
        self.host = self._server.host

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def base_url(self) -> str:
        """OpenAI base URL, ending in ``/v1``."""
        return f"{self._server.url}/v1"

    @property
    def origin(self) -> str:
        """The address without a path: the base URL the Anthropic and Gemini SDKs take
        (Anthropic's API is under ``/v1``, Gemini's under ``/v1beta``)."""
        return self._server.url

    async def start(self) -> None:
        await self._server.start()

    async def stop(self) -> None:
        await self._server.stop()
        await self.runtime.aclose()

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

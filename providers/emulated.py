"""The `emulated` kind: an emulator engine started on loopback, spoken to over OpenAI's wire.

Opening starts the engine on a free port and wraps the OpenAI-compatible adapter around
its URL, so an emulated backend takes the same network path as a real one; closing the
provider closes the adapter's connections, then stops the engine.
"""

from __future__ import annotations

import logging

from emulator import EmulatorServer, EmulatorSettings
from providers.base import (
    Deadlines,
    HealthResult,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamStream,
)
from providers.openai_compatible import OpenAICompatibleProvider
from providers.settings import ProviderSettings

logger = logging.getLogger("switchyard")


async def open_emulated(settings: ProviderSettings) -> EmulatedProvider:
    """Start an engine serving `settings.models` with `settings.emulator`'s options."""
    engine = EmulatorServer(
        EmulatorSettings.serving(settings.models, settings.emulator), host="127.0.0.1", port=0
    )
    await engine.start()
    logger.info("emulated engine %s listening on %s", settings.name, engine.base_url)
    adapter = OpenAICompatibleProvider(
        settings.name,
        engine.base_url,
        settings.api_key,
        max_connections=settings.max_connections,
        idle_keepalive_s=settings.idle_keepalive_s,
    )
    return EmulatedProvider(engine, adapter)


class EmulatedProvider:
    """The OpenAI-compatible adapter over an engine it owns; `close()` stops both."""

    def __init__(self, engine: EmulatorServer, adapter: OpenAICompatibleProvider) -> None:
        self.name = adapter.name
        self.engine = engine
        self.adapter = adapter

    @property
    def base_url(self) -> str:
        return self.adapter.base_url

    async def send(self, request: UpstreamRequest, deadlines: Deadlines) -> UpstreamResponse:
        return await self.adapter.send(request, deadlines)

    async def open_stream(self, request: UpstreamRequest, deadlines: Deadlines) -> UpstreamStream:
        return await self.adapter.open_stream(request, deadlines)

    async def health(self, timeout_s: float) -> HealthResult:
        return await self.adapter.health(timeout_s)

    async def close(self) -> None:
        try:
            await self.adapter.close()
        finally:
            await self.engine.stop()

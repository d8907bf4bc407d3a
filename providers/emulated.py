"""Emulated backends: an emulator engine started on loopback, spoken to like the real thing.

Opening starts the engine on a free port, then opens the adapter of the wire format the
backend's kind names around its address: OpenAI's for kind `emulated`, Anthropic's
Messages API for kind `anthropic`, Gemini's for kind `gemini` (one engine speaks all
three). So an emulated backend takes the same network path and the same translation as a
real one, and an emulated "cloud" tests the adapter the real cloud gets. Closing the
provider closes the adapter's connections, then stops the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings
from providers.anthropic.provider import open_anthropic
from providers.base import (
    Deadlines,
    HealthResult,
    Provider,
    ProviderFactory,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamStream,
)
from providers.gemini.provider import open_gemini
from providers.openai_compatible import open_openai_compatible
from providers.settings import BackendKind, ProviderSettings

logger = logging.getLogger("switchyard")


@dataclass(frozen=True, slots=True)
class _Wire:
    """How one kind reaches an emulator: the kind its adapter is opened as, that adapter,
    and where the format lives on the engine (its API root after the origin)."""

    kind: BackendKind
    factory: ProviderFactory
    api_root: str


WIRES: Mapping[BackendKind, _Wire] = MappingProxyType(
    {
        "emulated": _Wire("openai-compatible", open_openai_compatible, "/v1"),
        "anthropic": _Wire("anthropic", open_anthropic, "/v1"),
        "gemini": _Wire("gemini", open_gemini, "/v1beta"),
    }
)
"""Every kind an emulator can stand in for (`providers.settings.EMULATOR_KINDS`)."""


async def open_emulated(settings: ProviderSettings) -> EmulatedProvider:
    """Start an engine serving `settings.models` with `settings.emulator`'s options, and
    open the adapter of `settings.kind`'s format on it."""
    wire = WIRES[settings.kind]
    engine = EmulatorServer(
        EmulatorSettings.serving(settings.models, settings.emulator), host="127.0.0.1", port=0
    )
    await engine.start()
    try:
        spoken = settings.model_copy(
            update={"kind": wire.kind, "base_url": engine.origin + wire.api_root, "emulator": None}
        )
        adapter = await wire.factory(spoken)
    except BaseException:
        await engine.stop()
        raise
    logger.info("emulated engine %s listening on %s", settings.name, adapter.base_url)
    return EmulatedProvider(engine, adapter)


class EmulatedProvider:
    """The adapter over an engine it owns; `close()` stops both."""

    def __init__(self, engine: EmulatorServer, adapter: Provider) -> None:
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

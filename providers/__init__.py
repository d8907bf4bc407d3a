"""Provider adapters: one per provider family, behind the `Provider` protocol.

A plugin framework: it owns its contract (`base`), settings and error tree and never
imports the gateway, which builds `ProviderSettings` and maps the errors to HTTP.
"""

from providers.anthropic import AnthropicProvider
from providers.base import (
    Deadlines,
    HealthResult,
    Provider,
    ProviderFactory,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamStream,
)
from providers.emulated import EmulatedProvider
from providers.errors import (
    ApiError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamStatusError,
    UpstreamTimeout,
)
from providers.openai_compatible import OpenAICompatibleProvider
from providers.registry import open_provider
from providers.settings import DEFAULT_IDLE_KEEPALIVE_S, BackendKind, ProviderSettings

__all__ = [
    "DEFAULT_IDLE_KEEPALIVE_S",
    "AnthropicProvider",
    "ApiError",
    "BackendKind",
    "Deadlines",
    "EmulatedProvider",
    "HealthResult",
    "OpenAICompatibleProvider",
    "Provider",
    "ProviderFactory",
    "ProviderSettings",
    "UpstreamConnectError",
    "UpstreamError",
    "UpstreamProtocolError",
    "UpstreamRequest",
    "UpstreamResponse",
    "UpstreamStatusError",
    "UpstreamStream",
    "UpstreamTimeout",
    "open_provider",
]

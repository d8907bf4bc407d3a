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
    UpstreamCredentialsRefused,
    UpstreamError,
    UpstreamNotReady,
    UpstreamProtocolError,
    UpstreamStatusError,
    UpstreamTimeout,
)
from providers.llama_cpp import LlamaCppProvider
from providers.openai_compatible import OpenAICompatibleProvider
from providers.presets import PRESETS, Preset, preset_of, with_preset_defaults
from providers.rate_limits import RateLimitSignal, rate_limit_signal
from providers.registry import open_provider
from providers.settings import (
    DEFAULT_IDLE_KEEPALIVE_S,
    BackendKind,
    PresetName,
    ProviderSettings,
)

__all__ = [
    "DEFAULT_IDLE_KEEPALIVE_S",
    "PRESETS",
    "AnthropicProvider",
    "ApiError",
    "BackendKind",
    "Deadlines",
    "EmulatedProvider",
    "HealthResult",
    "LlamaCppProvider",
    "OpenAICompatibleProvider",
    "Preset",
    "PresetName",
    "Provider",
    "ProviderFactory",
    "ProviderSettings",
    "RateLimitSignal",
    "UpstreamConnectError",
    "UpstreamCredentialsRefused",
    "UpstreamError",
    "UpstreamNotReady",
    "UpstreamProtocolError",
    "UpstreamRequest",
    "UpstreamResponse",
    "UpstreamStatusError",
    "UpstreamStream",
    "UpstreamTimeout",
    "open_provider",
    "preset_of",
    "rate_limit_signal",
    "with_preset_defaults",
]

"""Provider adapters: one per provider family, behind the `Provider` protocol."""

from providers.base import (
    Deadlines,
    HealthResult,
    Provider,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamStream,
)
from providers.openai_compatible import OpenAICompatibleProvider
from providers.registry import build_provider

__all__ = [
    "Deadlines",
    "HealthResult",
    "OpenAICompatibleProvider",
    "Provider",
    "UpstreamRequest",
    "UpstreamResponse",
    "UpstreamStream",
    "build_provider",
]

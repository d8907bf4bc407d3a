"""Which adapter serves which backend kind."""

from __future__ import annotations

from gateway.backend_config import BackendConfig
from providers.base import Provider
from providers.openai_compatible import OpenAICompatibleProvider


def build_provider(config: BackendConfig, base_url: str) -> Provider:
    """Every kind known today speaks the OpenAI wire format; native adapters come later."""
    return OpenAICompatibleProvider(
        config.name,
        base_url,
        config.api_key(),
        max_connections=config.max_connections,
        idle_keepalive_s=config.idle_keepalive_s,
    )

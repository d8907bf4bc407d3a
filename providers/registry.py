"""Which adapter serves which backend kind, and opening a provider for one backend."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from providers.anthropic import open_anthropic
from providers.azure import open_azure_openai
from providers.base import Provider, ProviderFactory
from providers.emulated import open_emulated
from providers.gemini import open_gemini
from providers.openai_compatible import open_openai_compatible
from providers.settings import BackendKind, ProviderSettings

FACTORIES: Mapping[BackendKind, ProviderFactory] = MappingProxyType(
    {
        # Engines and clouds that speak the OpenAI wire format with a bearer key.
        "openai-compatible": open_openai_compatible,
        "vllm": open_openai_compatible,
        "sglang": open_openai_compatible,
        "llama-cpp": open_openai_compatible,
        "ollama": open_openai_compatible,
        "openai": open_openai_compatible,
        "emulated": open_emulated,
        # Native wire formats, translated to and from OpenAI's inside the adapter.
        "anthropic": open_anthropic,
        "gemini": open_gemini,
        # OpenAI's wire at Azure's deployment URLs, with an api-key header.
        "azure-openai": open_azure_openai,
    }
)


async def open_provider(settings: ProviderSettings) -> Provider:
    """The adapter for `settings.kind`, opened; see `ProviderFactory`."""
    return await FACTORIES[settings.kind](settings)

"""Which adapter serves which backend kind, and opening a provider for one backend."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from providers.base import Provider, ProviderFactory
from providers.emulated import open_emulated
from providers.openai_compatible import open_openai_compatible
from providers.settings import BackendKind, ProviderSettings

FACTORIES: Mapping[BackendKind, ProviderFactory] = MappingProxyType(
    {
        # Every engine and cloud known today speaks the OpenAI wire format; native
        # adapters come later.
        "openai-compatible": open_openai_compatible,
        "vllm": open_openai_compatible,
        "sglang": open_openai_compatible,
        "llama-cpp": open_openai_compatible,
        "ollama": open_openai_compatible,
        "openai": open_openai_compatible,
        "emulated": open_emulated,
    }
)


async def open_provider(settings: ProviderSettings) -> Provider:
    """The adapter for `settings.kind`, opened; see `ProviderFactory`."""
    return await FACTORIES[settings.kind](settings)

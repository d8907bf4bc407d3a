"""Which adapter serves which backend kind, and opening a provider for one backend."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from providers.anthropic import open_anthropic
from providers.azure import open_azure_openai
from providers.base import Provider, ProviderFactory
from providers.emulated import open_emulated
from providers.gemini import open_gemini
from providers.llama_cpp import open_llama_cpp
from providers.openai_compatible import open_openai_compatible
from providers.presets import KIND_PRESETS
from providers.settings import BackendKind, ProviderSettings

FACTORIES: Mapping[BackendKind, ProviderFactory] = MappingProxyType(
    {
        # Engines and clouds that speak the OpenAI wire format with a bearer key.
        "openai-compatible": open_openai_compatible,
        "vllm": open_openai_compatible,
        "sglang": open_openai_compatible,
        "ollama": open_openai_compatible,
        "openai": open_openai_compatible,
        # llama-server: OpenAI's wire, with its own reading of "not ready" (loading).
        "llama-cpp": open_llama_cpp,
        "emulated": open_emulated,
        # Native wire formats, translated to and from OpenAI's inside the adapter.
        "anthropic": open_anthropic,
        "gemini": open_gemini,
        # OpenAI's wire at Azure's deployment URLs, with an api-key header.
        "azure-openai": open_azure_openai,
    }
)


_PRESET_KINDS: Mapping[str, BackendKind] = MappingProxyType(
    {preset: kind for kind, preset in KIND_PRESETS.items()}
)


def adapter_kind(settings: ProviderSettings) -> BackendKind:
    """The kind whose adapter serves `settings`: its own, but kind openai-compatible naming
    a kind's preset is that kind (`preset: llama-cpp` reads llama-server's answers too)."""
    if settings.kind == "openai-compatible" and settings.preset is not None:
        return _PRESET_KINDS.get(settings.preset, settings.kind)
    return settings.kind


async def open_provider(settings: ProviderSettings) -> Provider:
    """The adapter for `adapter_kind(settings)`, opened; see `ProviderFactory`. With an
    `emulator` block, a native kind's adapter talks to an emulator started for it instead
    of the provider (`providers.emulated`)."""
    if settings.emulated:
        return await open_emulated(settings)
    return await FACTORIES[adapter_kind(settings)](settings)

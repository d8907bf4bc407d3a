"""Which adapter serves which backend kind, and opening a provider for one backend.

An adapter's module is imported when a backend of its kind is first opened, not before:
a gateway in front of vLLM loads the OpenAI-compatible adapter only.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import cast

from providers.base import Provider, ProviderFactory
from providers.presets import KIND_PRESETS
from providers.settings import BackendKind, ProviderSettings

_OPENAI_COMPATIBLE = "providers.openai_compatible:open_openai_compatible"
_EMULATED = "providers.emulated:open_emulated"

FACTORIES: Mapping[BackendKind, str] = MappingProxyType(
    {
        # Engines and clouds that speak the OpenAI wire format with a bearer key.
        "openai-compatible": _OPENAI_COMPATIBLE,
        "vllm": _OPENAI_COMPATIBLE,
        "sglang": _OPENAI_COMPATIBLE,
        "ollama": _OPENAI_COMPATIBLE,
        "openai": _OPENAI_COMPATIBLE,
        # llama-server: OpenAI's wire, with its own reading of "not ready" (loading).
        "llama-cpp": "providers.llama_cpp:open_llama_cpp",
        "emulated": _EMULATED,
        # Native wire formats, translated to and from OpenAI's inside the adapter.
        "anthropic": "providers.anthropic.provider:open_anthropic",
        "gemini": "providers.gemini.provider:open_gemini",
        # OpenAI's wire at Azure's deployment URLs, with an api-key header.
        "azure-openai": "providers.azure:open_azure_openai",
    }
)
"""Each kind's factory as `module:function`, imported by `factory_of` on first use."""


def factory_of(kind: BackendKind) -> ProviderFactory:
    """The factory of `kind`'s adapter, its module imported now if it was not yet."""
    return _load(FACTORIES[kind])


def _load(ref: str) -> ProviderFactory:
    module, _, name = ref.partition(":")
    return cast(ProviderFactory, getattr(importlib.import_module(module), name))


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
        return await _load(_EMULATED)(settings)
    return await factory_of(adapter_kind(settings))(settings)

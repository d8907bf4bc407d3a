"""Known OpenAI-compatible services, by preset name: where each serves by default, how it
takes a key, what its health probe and model list are, and where its usage differs.

The host fills a backend's unset settings from its preset with `with_preset_defaults`
before opening it: kinds vllm, sglang, llama-cpp, ollama and openai are their own preset,
kind openai-compatible names one (`preset: deepseek`). A preset never adds a header: an
optional one (OpenRouter's attribution) is sent only when configured, so nothing that
identifies the deployment leaves it by default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal
from urllib.parse import urlsplit

from providers.settings import NATIVE_BASE_URLS, BackendKind, PresetName, ProviderSettings

AuthStyle = Literal["bearer", "none"]
"""`bearer`: the service needs a key, sent as `Authorization: Bearer`. `none`: it takes
none by default; a key configured anyway (`vllm serve --api-key`) is sent the same way."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A GET target: a path under the base URL, or under its origin for the probes that
    engines serve beside their OpenAI prefix (vLLM's `/health` is not under `/v1`)."""

    path: str
    from_origin: bool = False

    def url(self, base_url: str) -> str:
        base = base_url.rstrip("/")
        if not self.from_origin:
            return base + self.path
        parts = urlsplit(base)
        return f"{parts.scheme}://{parts.netloc}{self.path}"


@dataclass(frozen=True, slots=True)
class UsageFields:
    """Where a service's usage object reports prompt-cache hits and reasoning tokens, as
    `providers.usage.usage_of` reads them; None where it reports none."""

    cached_tokens: str | None = "prompt_tokens_details.cached_tokens"
    reasoning_tokens: str | None = "completion_tokens_details.reasoning_tokens"
    note: str = ""


@dataclass(frozen=True, slots=True)
class Preset:
    name: PresetName
    base_url: str
    auth: AuthStyle
    health: Endpoint
    """What the health probe GETs."""
    models: Endpoint
    """Where the service lists its models (for the host's discovery; the adapter sends
    only what it is asked)."""
    local: bool
    """An engine the operator runs, at its usual port on this machine by default."""
    optional_headers: tuple[str, ...] = ()
    """Headers the service reads when the operator configures them; never sent unasked."""
    usage: UsageFields = field(default_factory=UsageFields)


_MODELS = Endpoint("/models")


def _cloud(name: PresetName, base_url: str, usage: UsageFields | None = None) -> Preset:
    # Clouds list models at /models under their base, and that list is the probe: cheap,
    # and it checks the key as well as the address.
    return Preset(name, base_url, "bearer", _MODELS, _MODELS, False, usage=usage or UsageFields())


def _engine(name: PresetName, port: int, health: Endpoint, usage: UsageFields) -> Preset:
    return Preset(name, f"http://127.0.0.1:{port}/v1", "none", health, _MODELS, True, usage=usage)


PRESETS: Mapping[PresetName, Preset] = MappingProxyType(
    {
        "openai": _cloud("openai", "https://api.openai.com/v1"),
        "deepseek": _cloud(
            "deepseek",
            "https://api.deepseek.com",
            UsageFields(
                cached_tokens="prompt_cache_hit_tokens",
                note="prompt_cache_hit_tokens + prompt_cache_miss_tokens = prompt_tokens",
            ),
        ),
        "together": _cloud("together", "https://api.together.xyz/v1"),
        "fireworks": _cloud("fireworks", "https://api.fireworks.ai/inference/v1"),
        "groq": _cloud("groq", "https://api.groq.com/openai/v1"),
        "mistral": _cloud("mistral", "https://api.mistral.ai/v1"),
        "openrouter": Preset(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "bearer",
            _MODELS,
            _MODELS,
            False,
            optional_headers=("HTTP-Referer", "X-Title"),
        ),
        "vllm": _engine(
            "vllm",
            8000,
            Endpoint("/health", from_origin=True),
            UsageFields(note="cached_tokens only with --enable-prompt-tokens-details"),
        ),
        "sglang": _engine(
            "sglang",
            30000,
            Endpoint("/health", from_origin=True),
            UsageFields(note="cached_tokens only with --enable-cache-report"),
        ),
        "llama-cpp": _engine(
            "llama-cpp",
            8080,
            Endpoint("/health", from_origin=True),
            UsageFields(
                reasoning_tokens=None,
                note="else timings.cache_n (older servers; a stream without include_usage)",
            ),
        ),
        "ollama": _engine(
            "ollama",
            11434,
            Endpoint("/api/tags", from_origin=True),
            UsageFields(cached_tokens=None, reasoning_tokens=None),
        ),
    }
)


KIND_PRESETS: Mapping[BackendKind, PresetName] = MappingProxyType(
    {
        "vllm": "vllm",
        "sglang": "sglang",
        "llama-cpp": "llama-cpp",
        "ollama": "ollama",
        "openai": "openai",
    }
)
"""The kinds that are their own preset."""


def preset_of(settings: ProviderSettings) -> Preset | None:
    """The preset `settings` names, or the one its kind implies; None for neither."""
    name = settings.preset or KIND_PRESETS.get(settings.kind)
    return PRESETS[name] if name is not None else None


def provider_base_url(kind: BackendKind, preset: PresetName | None = None) -> str | None:
    """The base URL of the service behind a kind or preset, to compare a backend's with:
    Anthropic's and Gemini's (`NATIVE_BASE_URLS`), a cloud preset's (OpenAI's for kind
    openai). None for an engine, whose address is its operator's, and for kinds without
    one service (azure-openai, emulated, openai-compatible naming no preset)."""
    native = NATIVE_BASE_URLS.get(kind)
    if native is not None:
        return native
    name = preset or KIND_PRESETS.get(kind)
    found = PRESETS[name] if name is not None else None
    return found.base_url if found is not None and not found.local else None


def with_preset_defaults(settings: ProviderSettings) -> ProviderSettings:
    """`settings` with what they leave unset filled from their preset: the base URL and
    the health probe's URL. Settings without a preset come back as they are."""
    preset = preset_of(settings)
    if preset is None:
        return settings
    base_url = settings.base_url or preset.base_url
    return settings.model_copy(
        update={
            "preset": preset.name,
            "base_url": base_url,
            "health_url": settings.health_url or preset.health.url(base_url),
        }
    )

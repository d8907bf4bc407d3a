"""The preset table and the defaults it fills into a backend's settings."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from providers.llama_cpp import open_llama_cpp
from providers.presets import (
    KIND_PRESETS,
    PRESETS,
    Endpoint,
    preset_of,
    provider_base_url,
    with_preset_defaults,
)
from providers.registry import factory_of
from providers.settings import OPENAI_COMPATIBLE_KINDS, BackendKind, PresetName, ProviderSettings
from providers.usage import usage_of


@pytest.mark.parametrize(
    ("name", "base_url", "auth", "health_url", "models_url"),
    [
        (
            "openai",
            "https://api.openai.com/v1",
            "bearer",
            "https://api.openai.com/v1/models",
            "https://api.openai.com/v1/models",
        ),
        (
            "deepseek",
            "https://api.deepseek.com",
            "bearer",
            "https://api.deepseek.com/models",
            "https://api.deepseek.com/models",
        ),
        (
            "together",
            "https://api.together.xyz/v1",
            "bearer",
            "https://api.together.xyz/v1/models",
            "https://api.together.xyz/v1/models",
        ),
        (
            "fireworks",
            "https://api.fireworks.ai/inference/v1",
            "bearer",
            "https://api.fireworks.ai/inference/v1/models",
            "https://api.fireworks.ai/inference/v1/models",
        ),
        (
            "groq",
            "https://api.groq.com/openai/v1",
            "bearer",
            "https://api.groq.com/openai/v1/models",
            "https://api.groq.com/openai/v1/models",
        ),
        (
            "mistral",
            "https://api.mistral.ai/v1",
            "bearer",
            "https://api.mistral.ai/v1/models",
            "https://api.mistral.ai/v1/models",
        ),
        (
            "openrouter",
            "https://openrouter.ai/api/v1",
            "bearer",
            "https://openrouter.ai/api/v1/models",
            "https://openrouter.ai/api/v1/models",
        ),
        (
            "vllm",
            "http://127.0.0.1:8000/v1",
            "none",
            "http://127.0.0.1:8000/health",
            "http://127.0.0.1:8000/v1/models",
        ),
        (
            "sglang",
            "http://127.0.0.1:30000/v1",
            "none",
            "http://127.0.0.1:30000/health",
            "http://127.0.0.1:30000/v1/models",
        ),
        (
            "llama-cpp",
            "http://127.0.0.1:8080/v1",
            "none",
            "http://127.0.0.1:8080/health",
            "http://127.0.0.1:8080/v1/models",
        ),
        (
            "ollama",
            "http://127.0.0.1:11434/v1",
            "none",
            "http://127.0.0.1:11434/api/tags",
            "http://127.0.0.1:11434/v1/models",
        ),
    ],
)
def test_each_preset(
    name: PresetName, base_url: str, auth: str, health_url: str, models_url: str
) -> None:
    preset = PRESETS[name]
    assert (preset.name, preset.base_url, preset.auth) == (name, base_url, auth)
    assert preset.health.url(preset.base_url) == health_url
    assert preset.models.url(preset.base_url) == models_url
    assert preset.local == (auth == "none")


def test_every_preset_name_is_in_the_table_and_every_implied_kind_is_served_as_openai() -> None:
    assert set(PRESETS) == set(get_args(PresetName))
    assert set(KIND_PRESETS) <= OPENAI_COMPATIBLE_KINDS
    # llama-cpp's adapter is the OpenAI-compatible one reading llama-server's "not ready".
    plain = OPENAI_COMPATIBLE_KINDS - {"llama-cpp"}
    assert {factory_of(kind) for kind in plain} == {factory_of("openai")}
    assert factory_of("llama-cpp") is open_llama_cpp


def test_only_openrouter_knows_optional_headers() -> None:
    optional = {name: preset.optional_headers for name, preset in PRESETS.items()}
    assert optional.pop("openrouter") == ("HTTP-Referer", "X-Title")
    assert set(optional.values()) == {()}


@pytest.mark.parametrize(
    ("settings", "base_url", "health_url"),
    [
        ({"kind": "vllm"}, "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/health"),
        (
            {"kind": "vllm", "base_url": "http://gpu-7:9000/v1/"},
            "http://gpu-7:9000/v1/",
            "http://gpu-7:9000/health",
        ),
        (
            {"kind": "ollama", "health_url": "http://box:11434/"},
            "http://127.0.0.1:11434/v1",
            "http://box:11434/",
        ),
        (
            {"preset": "deepseek"},
            "https://api.deepseek.com",
            "https://api.deepseek.com/models",
        ),
        (
            {"kind": "openai", "base_url": "https://proxy.internal/openai/v1"},
            "https://proxy.internal/openai/v1",
            "https://proxy.internal/openai/v1/models",
        ),
    ],
    ids=["local-default", "own-address", "own-probe", "named-cloud", "cloud-behind-proxy"],
)
def test_defaults_fill_only_what_is_unset(
    settings: dict[str, str], base_url: str, health_url: str
) -> None:
    given = ProviderSettings.model_validate({"name": "b", "api_key": "sk-1", **settings})
    filled = with_preset_defaults(given)
    assert (filled.base_url, filled.health_url) == (base_url, health_url)
    preset = preset_of(given)
    assert preset is not None and filled.preset == preset.name
    assert filled.extra_headers == {}, "a preset never adds a header"
    assert filled.api_key == "sk-1"
    assert with_preset_defaults(filled) == filled


@pytest.mark.parametrize("kind", ["openai-compatible", "anthropic", "gemini", "emulated"])
def test_settings_without_a_preset_come_back_as_they_are(kind: BackendKind) -> None:
    settings = ProviderSettings(name="b", kind=kind, base_url="http://h/v1")
    assert preset_of(settings) is None
    assert with_preset_defaults(settings) is settings


def nested(path: str, value: int) -> dict[str, Any]:
    """`{"a": {"b": value}}` for "a.b"."""
    head, _, rest = path.partition(".")
    return {head: nested(rest, value) if rest else value}


@pytest.mark.parametrize(
    ("name", "field"),
    [(name, p.usage.cached_tokens) for name, p in PRESETS.items() if p.usage.cached_tokens],
)
def test_each_presets_cache_field_is_what_usage_reads(name: PresetName, field: str) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 1, **nested(field, 7)}
    normalised = usage_of({"usage": usage})
    assert normalised is not None and normalised.cached_tokens == 7, name


def test_an_endpoint_from_the_origin_drops_the_base_path() -> None:
    assert Endpoint("/health", from_origin=True).url("https://h:1/a/v1/") == "https://h:1/health"
    assert Endpoint("/models").url("https://h:1/a/v1/") == "https://h:1/a/v1/models"


@pytest.mark.parametrize(
    ("kind", "preset", "official"),
    [
        ("anthropic", None, "https://api.anthropic.com/v1"),
        ("gemini", None, "https://generativelanguage.googleapis.com/v1beta"),
        ("openai", None, "https://api.openai.com/v1"),
        ("openai-compatible", "groq", "https://api.groq.com/openai/v1"),
        ("openai-compatible", "deepseek", "https://api.deepseek.com"),
        # An engine's address is its operator's; these kinds have no one service.
        ("vllm", None, None),
        ("openai-compatible", "llama-cpp", None),
        ("openai-compatible", None, None),
        ("azure-openai", None, None),
        ("emulated", None, None),
    ],
)
def test_the_providers_own_base_url(
    kind: BackendKind, preset: PresetName | None, official: str | None
) -> None:
    assert provider_base_url(kind, preset) == official

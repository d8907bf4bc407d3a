"""Provider settings and the registry of factories: every kind opens, keys stay private."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from providers.openai_compatible import OpenAICompatibleProvider
from providers.registry import FACTORIES, factory_of, open_provider
from providers.settings import DEFAULT_IDLE_KEEPALIVE_S, BackendKind, ProviderSettings


def test_the_api_key_is_kept_out_of_repr_and_str() -> None:
    settings = ProviderSettings(name="a", base_url="http://h/v1", api_key="sk-secret-123")
    assert "sk-secret-123" not in repr(settings)
    assert "sk-secret-123" not in str(settings)
    assert settings.api_key == "sk-secret-123"


def test_defaults_and_unknown_keys() -> None:
    settings = ProviderSettings(name="a")
    assert (settings.kind, settings.max_connections, settings.idle_keepalive_s) == (
        "openai-compatible",
        256,
        DEFAULT_IDLE_KEEPALIVE_S,
    )
    with pytest.raises(ValidationError, match="extra"):
        ProviderSettings(name="a", colour="red")  # type: ignore[call-arg]


def test_every_kind_has_a_factory() -> None:
    """Every kind names an importable factory (the registry imports them lazily)."""
    assert set(FACTORIES) == set(get_args(BackendKind))
    assert all(callable(factory_of(kind)) for kind in FACTORIES)


@pytest.mark.parametrize(
    "kind", ["openai-compatible", "vllm", "sglang", "llama-cpp", "ollama", "openai"]
)
async def test_network_kinds_open_the_openai_compatible_adapter(kind: BackendKind) -> None:
    settings = ProviderSettings(
        name="a", kind=kind, base_url="http://10.0.0.1:8000/v1/", max_connections=3
    )
    provider = await open_provider(settings)
    try:
        assert isinstance(provider, OpenAICompatibleProvider)
        assert provider.name == "a"
        assert provider.base_url == "http://10.0.0.1:8000/v1"
    finally:
        await provider.close()


async def test_a_network_kind_needs_a_base_url() -> None:
    with pytest.raises(ValueError, match="base_url"):
        await open_provider(ProviderSettings(name="a", kind="vllm"))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "vllm", "preset": "deepseek"}, "kind vllm is its own preset"),
        ({"kind": "anthropic", "preset": "openai"}, "preset: only for OpenAI-compatible"),
        ({"kind": "gemini", "extra_headers": {"X-Title": "a"}}, "extra_headers: only for"),
        ({"kind": "azure-openai", "health_url": "http://h/"}, "health_url: only for"),
        ({"extra_headers": {"Authorization": "Bearer x"}}, "set by the adapter"),
        ({"extra_headers": {"Content-Type": "text/plain"}}, "set by the adapter"),
        ({"health_url": "/health"}, "health_url"),
    ],
)
def test_settings_refuse_what_no_adapter_would_honour(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        ProviderSettings.model_validate({"name": "b", **fields})


def test_extra_headers_stay_out_of_repr() -> None:
    settings = ProviderSettings(name="b", extra_headers={"X-Title": "internal-app-name"})
    assert "internal-app-name" not in repr(settings)

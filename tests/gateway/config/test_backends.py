"""A backend's config: presets fill what it leaves unset, keys only some kinds take, extra
headers bounded and never shown, and the settings its adapter is opened with."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from gateway.config.backends import BackendConfig
from gateway.config.root import parse_config
from gateway.errors import ConfigError
from gateway.fleet.scrape.engine_scrape import scrape_targets
from gateway.process.service import probe_once
from providers.registry import open_provider
from tests.conftest import StartEmulator, StartGateway, make_config

SECRET = "attribution-3f9a0c21d4e5b6a7"
"""A header value that must appear in no repr, log line, error or API answer."""

Edit = Callable[[dict[str, Any]], Any]


def backend(**fields: Any) -> BackendConfig:
    return BackendConfig.model_validate({"name": "a", "models": ["m"]} | fields)


def problems_of(edit: Edit) -> list[str]:
    config = make_config({"a": "http://127.0.0.1:9/v1", "b": "http://127.0.0.1:10/v1"})
    edit(config["backends"][0])
    try:
        parse_config(config)
    except ConfigError as exc:
        return exc.problems
    return []


def without_url(**fields: Any) -> Edit:
    def edit(b: dict[str, Any]) -> None:
        del b["base_url"]
        b.update(fields)

    return edit


CASES: list[tuple[str, Edit, list[str]]] = [
    (
        "no-url-no-preset",
        without_url(),
        ["backends.0.base_url: required for kind openai-compatible unless a preset gives it"],
    ),
    ("no-url-anthropic", without_url(kind="anthropic"), []),
    ("no-url-gemini", without_url(kind="gemini"), []),
    (
        "no-url-azure",
        without_url(kind="azure-openai"),
        ["backends.0.base_url: required for kind azure-openai"],
    ),
    ("no-url-preset", without_url(preset="groq"), []),
    ("emulated-anthropic", without_url(kind="anthropic", emulator={}), []),
    ("emulated-gemini-scraped", without_url(kind="gemini", emulator={}, metrics={}), []),
    (
        "emulator-for-an-engine-kind",
        without_url(kind="vllm", emulator={}),
        ["backends.0.emulator: only for kinds emulated, anthropic and gemini, not vllm"],
    ),
    ("no-url-engine-kind", without_url(kind="llama-cpp"), []),
    (
        "preset-of-another-kind",
        lambda b: b.update(kind="vllm", preset="deepseek"),
        ["backends.0.preset: kind vllm is its own preset; deepseek needs kind openai-compatible"],
    ),
    ("preset-of-its-own-kind", lambda b: b.update(kind="vllm", preset="vllm"), []),
    (
        "preset-on-a-native-kind",
        lambda b: b.update(kind="anthropic", preset="openai"),
        ["backends.0.preset: only for OpenAI-compatible kinds, not anthropic"],
    ),
    (
        "preset-unknown",
        lambda b: b.update(preset="nowhere"),
        [
            "backends.0.preset: Input should be 'openai', 'deepseek', 'together', 'fireworks', "
            "'groq', 'mistral', 'openrouter', 'vllm', 'sglang', 'llama-cpp' or 'ollama'"
        ],
    ),
    (
        "headers-on-gemini",
        lambda b: b.update(kind="gemini", extra_headers={"X-Title": SECRET}),
        ["backends.0.extra_headers: only for OpenAI-compatible kinds, not gemini"],
    ),
    (
        "health-url-on-azure",
        lambda b: b.update(kind="azure-openai", health_url="http://127.0.0.1:9/up"),
        ["backends.0.health_url: only for OpenAI-compatible kinds, not azure-openai"],
    ),
    (
        "api-version-elsewhere",
        lambda b: b.update(kind="openai", api_version="2024-10-21"),
        ["backends.0.api_version: only for kind azure-openai, not openai"],
    ),
    (
        "reserved-header",
        lambda b: b.update(extra_headers={"Authorization": SECRET}),
        ["backends.0.extra_headers.Authorization: set by the adapter, not here"],
    ),
    (
        "header-twice",
        lambda b: b.update(extra_headers={"X-Title": SECRET, "x-title": SECRET}),
        ["backends.0.extra_headers.x-title: given twice"],
    ),
    (
        "header-name",
        lambda b: b.update(extra_headers={"X Title": SECRET}),
        ["backends.0.extra_headers: header name 'X Title' is not a token of at most 64 characters"],
    ),
    (
        "header-line-break",
        lambda b: b.update(extra_headers={"X-Title": SECRET + "\r\nX-Injected: 1"}),
        [
            "backends.0.extra_headers.X-Title: the value must be at most 1024 printable "
            "ASCII characters"
        ],
    ),
    (
        "header-too-long",
        lambda b: b.update(extra_headers={"X-Title": SECRET * 100}),
        [
            "backends.0.extra_headers.X-Title: the value must be at most 1024 printable "
            "ASCII characters"
        ],
    ),
    (
        "too-many-headers",
        lambda b: b.update(extra_headers={f"X-H{i}": SECRET for i in range(17)}),
        [
            "backends.0.extra_headers: Dictionary should have at most 16 items after "
            "validation, not more"
        ],
    ),
    (
        "metrics-of-an-engine-preset",
        lambda b: b.update(preset="sglang", metrics={}),
        [],
    ),
    (
        "metrics-of-a-cloud-preset",
        lambda b: b.update(preset="groq", metrics={}),
        [
            "backends.0.metrics: kind openai-compatible has no known metrics endpoint; "
            "set metrics.url or metrics.path"
        ],
    ),
    (
        "cool-down-bound",
        lambda b: b.update(rate_limits={"max_cool_down_s": 0}),
        ["backends.0.rate_limits.max_cool_down_s: Input should be greater than 0"],
    ),
]


@pytest.mark.parametrize(("edit", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_problem_names_its_yaml_path(edit: Edit, expected: list[str]) -> None:
    problems = problems_of(edit)
    assert problems == expected
    assert not any(SECRET in problem for problem in problems)


@pytest.mark.parametrize(
    ("fields", "base_url", "health_url"),
    [
        (
            {"preset": "deepseek"},
            "https://api.deepseek.com",
            "https://api.deepseek.com/models",
        ),
        (
            {"kind": "vllm"},
            "http://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000/health",
        ),
        (
            {"kind": "ollama", "base_url": "http://10.0.0.5:11434/v1"},
            "http://10.0.0.5:11434/v1",
            "http://10.0.0.5:11434/api/tags",
        ),
        (
            {"preset": "vllm", "health_url": "http://10.0.0.9:8000/ready"},
            "http://127.0.0.1:8000/v1",
            "http://10.0.0.9:8000/ready",
        ),
        (
            {"base_url": "http://10.0.0.7:9000/v1"},
            "http://10.0.0.7:9000/v1",
            None,
        ),
    ],
    ids=["cloud-preset", "engine-kind", "engine-kind-own-url", "own-health-url", "no-preset"],
)
def test_a_preset_fills_what_the_backend_leaves_unset(
    fields: dict[str, Any], base_url: str, health_url: str | None
) -> None:
    settings = backend(**fields).provider_settings()
    assert (settings.base_url, settings.health_url) == (base_url, health_url)


def test_azure_gets_its_api_version() -> None:
    config = backend(kind="azure-openai", base_url="https://x.openai.azure.com", api_version="v1")
    assert config.provider_settings().api_version == "v1"


def test_extra_headers_reach_the_adapter_and_no_repr() -> None:
    config = backend(preset="openrouter", extra_headers={"X-Title": SECRET})
    settings = config.provider_settings()
    assert settings.extra_headers == {"X-Title": SECRET}
    assert SECRET not in repr(config) and SECRET not in str(config)
    assert SECRET not in repr(settings)


@pytest.mark.parametrize(
    ("kind", "base_url"),
    [
        ("anthropic", "https://api.anthropic.com/v1"),
        ("gemini", "https://generativelanguage.googleapis.com/v1beta"),
    ],
)
async def test_a_native_kind_without_base_url_goes_to_its_providers_api(
    kind: str, base_url: str
) -> None:
    provider = await open_provider(backend(kind=kind).provider_settings())
    try:
        assert provider.base_url == base_url
    finally:
        await provider.close()


async def test_the_scrape_goes_to_the_presets_address() -> None:
    config = backend(kind="vllm", metrics={})
    provider = await open_provider(config.provider_settings())
    try:
        [target] = scrape_targets([config], {"a": provider.base_url})
    finally:
        await provider.close()
    assert target.url == "http://127.0.0.1:8000/metrics"


async def test_an_emulated_clouds_scrape_goes_to_its_engine() -> None:
    config = backend(kind="anthropic", emulator={}, metrics={})
    assert config.emulated and config.provider_settings().emulated
    provider = await open_provider(config.provider_settings())
    try:
        [target] = scrape_targets([config], {"a": provider.base_url})
        assert target.url == provider.base_url.removesuffix("/v1") + "/metrics"
    finally:
        await provider.close()


async def test_an_engine_kind_is_served_and_probed_as_its_preset_says(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = await start_emulator()
    config = make_config({"local": engine.base_url})
    config["backends"][0].update(kind="vllm", extra_headers={"X-Title": SECRET})
    caplog.set_level(logging.DEBUG)
    gw = await start_gateway(config)
    chat = {"model": "default", "messages": [{"role": "user", "content": "hi"}]}
    response = await gw.client.post("/v1/chat/completions", json=chat)
    assert response.status_code == 200
    await probe_once(gw.gateway)  # GET {origin}/health, which the emulator serves
    backends = await gw.client.get("/v1/switchyard/backends")
    [row] = backends.json()["backends"]
    assert (row["healthy"], row["health_reason"]) == (True, "healthy")
    dashboard = await gw.client.get("/v1/switchyard/dashboard")
    for text in (response.text, backends.text, dashboard.text, caplog.text, repr(gw.gateway)):
        assert SECRET not in text

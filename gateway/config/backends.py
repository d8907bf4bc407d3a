"""A backend's configuration: where it is, what it serves, its limits, cache and metrics."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from gateway.config.cache import CacheConfig
from gateway.config.engine_polls import LlamaCppConfig, MetricsConfig
from gateway.config.placement import PlacementTag
from gateway.config.strict import StrictConfig as StrictConfig
from gateway.discovery.config import DiscoverConfig, discover_problem
from gateway.prefix.cache_semantics import CacheRules
from gateway.quality.config import ProbeConfig
from gateway.telemetry.config import PricingConfig
from policies.prices import PriceBook
from providers.presets import KIND_PRESETS, with_preset_defaults
from providers.settings import (
    DEFAULT_IDLE_KEEPALIVE_S,
    EMULATOR_KINDS,
    NATIVE_BASE_URLS,
    OPENAI_COMPATIBLE_KINDS,
    RESERVED_HEADERS,
    BackendKind,
    EmulatorBlock,
    HttpClient,
    PresetName,
    ProviderSettings,
)

MAX_EXTRA_HEADERS = 16
"""At most this many `extra_headers` per backend."""
MAX_HEADER_NAME_CHARS = 64
MAX_HEADER_VALUE_CHARS = 1024
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP field name (RFC 9110 token)."""
_HEADER_VALUE = re.compile(r"[\x20-\x7e\t]*")
"""Visible ASCII, spaces and tabs: no line break can end the header early."""
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""An environment variable's name, as shells write them."""
MAX_ENV_NAME_CHARS = 128


class BackendTimeouts(StrictConfig):
    """A backend's own deadlines; an unset field inherits the top-level `timeouts`."""

    connect_s: float | None = Field(None, gt=0)
    first_token_s: float | None = Field(None, gt=0)
    between_chunks_s: float | None = Field(None, gt=0)


ENGINE_KINDS: frozenset[str] = frozenset({"vllm", "sglang", "llama-cpp", "emulated"})
"""Kinds whose metrics endpoint is known (so is every emulated backend's): `/metrics` at the
base URL's origin."""


class RateLimitsConfig(StrictConfig):
    """What the gateway does with a provider's rate-limit headers (`gateway/fleet/
    provider_limits.py`): cool a spent budget down, count a nearly spent one as capacity."""

    enabled: bool = Field(
        True,
        description="Act on remaining/reset headers; off, only a 429's Retry-After (else "
        "1 s) keeps the backend out.",
    )
    max_cool_down_s: float = Field(
        300.0, gt=0, description="The longest one Retry-After or spent budget keeps it out."
    )
    stale_after_s: float = Field(
        10.0,
        gt=0,
        description="A reading of remaining requests and tokens is used at most this long, "
        "less when its reset comes sooner.",
    )


DroppableParam = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
_NEEDED_PARAMS = frozenset({"model", "messages", "prompt", "input", "stream"})


class BackendConfig(StrictConfig):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    kind: BackendKind = "openai-compatible"
    base_url: str | None = Field(
        None,
        pattern=r"^https?://",
        description="Required unless the backend is emulated, a preset supplies it, or its "
        "kind has a default (anthropic: https://api.anthropic.com/v1, gemini: "
        "https://generativelanguage.googleapis.com/v1beta).",
    )
    discover: DiscoverConfig | None = Field(
        None,
        description="Instead of one address, every address a DNS name has: a backend per "
        "address, followed as they change (base_url, if given, is the template: its host "
        "is replaced by each address).",
    )
    preset: PresetName | None = Field(
        None,
        description="kind openai-compatible: the service whose defaults fill base_url and "
        "health_url; kinds vllm, sglang, llama-cpp, ollama and openai are their own preset.",
    )
    drop_params: list[DroppableParam] = Field(
        default_factory=list,
        max_length=32,
        description="Top-level request fields taken out before a request goes to this "
        "backend: what it would refuse, or enforce in its own way (response_format on an "
        "engine that would constrain its grammar to it).",
    )
    extra_headers: dict[str, str] = Field(
        default_factory=dict,
        repr=False,
        max_length=MAX_EXTRA_HEADERS,
        description="OpenAI-compatible kinds: sent with every request (OpenRouter's "
        "HTTP-Referer, X-Title); never logged or shown.",
    )
    health_url: str | None = Field(
        None,
        pattern=r"^https?://",
        description="OpenAI-compatible kinds: what the health probe GETs (default: the "
        "preset's, else {base_url}/models).",
    )
    api_version: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="kind azure-openai: the api-version query parameter (default: the adapter's).",
    )
    emulator: EmulatorBlock = Field(
        None,
        description="kind emulated: how its engine behaves (the emulator's defaults); kinds "
        "anthropic and gemini: an emulator speaking that format stands in for the provider.",
    )
    api_key_env: str | None = Field(
        None,
        pattern=ENV_NAME_PATTERN,
        max_length=MAX_ENV_NAME_CHARS,
        description="Name of the environment variable holding the key; never the key (a "
        "name is letters, digits and `_`, so a key pasted here is refused, not echoed).",
    )
    models: list[str] = Field(min_length=1)
    tags: list[PlacementTag] = Field(
        default_factory=list,
        description="Placement tags (`local`, `eu`, ...) that routes and requests may require.",
    )
    context_window_tokens: int | None = Field(
        None, ge=1, description="Prompt plus output tokens it accepts per sequence; unset: unknown."
    )
    max_concurrency: int = Field(64, ge=1)
    max_connections: int = Field(256, ge=1)
    idle_keepalive_s: float = Field(
        DEFAULT_IDLE_KEEPALIVE_S,
        gt=0,
        description="Idle connections to the backend are closed after this. Keep it below "
        "the backend's own keep-alive (uvicorn, hence vLLM and SGLang, and llama.cpp: 5 s), "
        "or a request may be sent on a connection the backend is closing at that moment.",
    )
    http_client: HttpClient = Field(
        "lean",
        description="`lean`: requests to an `http://` base_url go through Switchyard's own "
        "keep-alive HTTP/1.1 client (about 60 % of aiohttp's CPU per exchange), health probes "
        "and their redirects too; `https://` uses aiohttp. `aiohttp`: every request "
        "through aiohttp.",
    )
    cache: CacheConfig = CacheConfig()
    timeouts: BackendTimeouts | None = Field(
        None, description="Per-backend deadlines; total_s is per request, so only top-level."
    )
    metrics: MetricsConfig | None = Field(
        None, description="Scrape the engine's /metrics for its own load (default: off)."
    )
    llama_cpp: LlamaCppConfig | None = Field(
        None,
        description="kind llama-cpp: polling /slots and reading /props (default: both on).",
    )
    probes: ProbeConfig | None = Field(
        None, description="This backend's quality probes; unset: `quality.probes`."
    )
    pricing: PricingConfig | None = Field(
        None,
        description="Prices of every model it serves, for the cost in records and metrics "
        "and for cost-scorer (unset: free, or an amortised price the scorer assumes).",
    )
    model_pricing: dict[str, PricingConfig] = Field(
        default_factory=dict,
        description="Per upstream model (one of `models`): its prices here, instead of `pricing`.",
    )
    rate_limits: RateLimitsConfig = RateLimitsConfig()

    @field_validator("drop_params")
    @classmethod
    def _keeps_what_a_request_needs(cls, fields: list[str]) -> list[str]:
        needed = sorted(_NEEDED_PARAMS.intersection(fields))
        if needed:
            raise ValueError(f"cannot drop {', '.join(needed)}: every request needs it")
        return fields

    @field_validator("extra_headers")
    @classmethod
    def _check_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        # Messages name the header, never its value: a value may be a secret.
        seen: set[str] = set()
        for name, value in headers.items():
            if not _HEADER_NAME.fullmatch(name) or len(name) > MAX_HEADER_NAME_CHARS:
                raise ValueError(
                    f"header name {name[:MAX_HEADER_NAME_CHARS]!r} is not a token of at most "
                    f"{MAX_HEADER_NAME_CHARS} characters"
                )
            if name.lower() in RESERVED_HEADERS:
                raise ValueError(f"{name}: set by the adapter, not here")
            if name.lower() in seen:
                raise ValueError(f"{name}: given twice")
            if len(value) > MAX_HEADER_VALUE_CHARS or not _HEADER_VALUE.fullmatch(value):
                raise ValueError(
                    f"{name}: the value must be at most {MAX_HEADER_VALUE_CHARS} printable "
                    "ASCII characters"
                )
            seen.add(name.lower())
        return headers

    @model_validator(mode="after")
    def _check_address(self) -> BackendConfig:
        self._check_metrics()
        for model in self.model_pricing:
            if model not in self.models:
                raise ValueError(f"model_pricing.{model}: not one of this backend's models")
        self._check_kind_fields()
        self.cache_rules  # noqa: B018 - raises on keys its semantics refuse
        if self.emulator is not None and self.kind not in EMULATOR_KINDS:
            raise ValueError(
                f"emulator: only for kinds emulated, anthropic and gemini, not {self.kind}"
            )
        if (problem := discover_problem(self)) is not None:
            raise ValueError(problem)
        if self.emulated:
            if self.base_url is not None:
                raise ValueError("base_url: an emulated backend is started on a free port")
        elif self.base_url is None and self.preset_name is None and not self._native_service:
            if self.discover is not None:
                return self  # each address makes the URL (discover.port is required)
            unless = " unless a preset gives it" if self.kind in OPENAI_COMPATIBLE_KINDS else ""
            raise ValueError(f"base_url: required for kind {self.kind}{unless}")
        return self

    def _check_kind_fields(self) -> None:
        """The keys only some kinds take, each refused by its own path elsewhere."""
        kind = self.kind
        if kind in OPENAI_COMPATIBLE_KINDS:
            if self.preset is not None and kind not in ("openai-compatible", self.preset):
                raise ValueError(
                    f"preset: kind {kind} is its own preset; {self.preset} needs kind "
                    "openai-compatible"
                )
        else:
            for field in ("preset", "extra_headers", "health_url"):
                if getattr(self, field):
                    raise ValueError(f"{field}: only for OpenAI-compatible kinds, not {kind}")
        if self.api_version is not None and kind != "azure-openai":
            raise ValueError(f"api_version: only for kind azure-openai, not {kind}")
        if self.llama_cpp is not None and self.preset_name != "llama-cpp":
            raise ValueError(f"llama_cpp: only for kind llama-cpp, not {kind}")

    def _check_metrics(self) -> None:
        metrics = self.metrics
        if metrics is None or not metrics.enabled:
            return
        if self.emulated and metrics.url is not None:
            raise ValueError("metrics.url: an emulated backend is started on a free port")
        engine = self.emulated or self.kind in ENGINE_KINDS or self.preset in ENGINE_KINDS
        if not engine and not metrics.explicit:
            raise ValueError(
                f"metrics: kind {self.kind} has no known metrics endpoint; "
                "set metrics.url or metrics.path"
            )

    @property
    def emulated(self) -> bool:
        """Started by the gateway on loopback: kind emulated, or an `emulator` block that
        stands in for an Anthropic or Gemini provider (`providers.emulated`)."""
        return self.kind == "emulated" or self.emulator is not None

    @property
    def cache_rules(self) -> CacheRules:
        """What the prefix index assumes of this backend's cache (`cache`, resolved)."""
        return self.cache.rules(self.kind, self.preset_name, self.emulator)

    @property
    def _native_service(self) -> bool:
        """Kinds anthropic and gemini: without `base_url`, their adapter goes to the
        provider's own API (`NATIVE_BASE_URLS`), as kind openai's preset does."""
        return self.kind in NATIVE_BASE_URLS

    @property
    def preset_name(self) -> PresetName | None:
        """The preset whose defaults fill this backend's unset settings, if any."""
        return self.preset or KIND_PRESETS.get(self.kind)

    @property
    def scrapes_metrics(self) -> bool:
        return self.metrics is not None and self.metrics.enabled

    @property
    def llama_cpp_status(self) -> LlamaCppConfig | None:
        """What is read of llama-server itself (`llama_cpp`, on by default); None for any
        other kind. Kind openai-compatible with `preset: llama-cpp` counts as the kind."""
        if self.preset_name != "llama-cpp":
            return None
        return self.llama_cpp or LlamaCppConfig()

    def api_key(self) -> str | None:
        """The key `api_key_env` holds now; None when it names none, or one unset or blank."""
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env, "").strip() or None

    def provider_settings(self) -> ProviderSettings:
        """What this backend's provider adapter is opened with (the key read now), with
        what the backend leaves unset filled from its preset."""
        settings = ProviderSettings(
            name=self.name,
            kind=self.kind,
            base_url=self.base_url,
            api_key=self.api_key(),
            api_key_env=self.api_key_env,
            models=tuple(self.models),
            max_connections=self.max_connections,
            idle_keepalive_s=self.idle_keepalive_s,
            http_client=self.http_client,
            emulator=self.emulator,
            api_version=self.api_version,
            preset=self.preset,
            extra_headers=dict(self.extra_headers),
            health_url=self.health_url,
        )
        return with_preset_defaults(settings)


def price_book(backends: Sequence[BackendConfig]) -> PriceBook:
    """Every backend's prices, and each model's own where `model_pricing` gives one."""
    return PriceBook(
        by_backend={b.name: b.pricing for b in backends if b.pricing is not None},
        by_model={(b.name, model): p for b in backends for model, p in b.model_pricing.items()},
    )

"""What a provider adapter is opened with: one backend's address, credentials and limits."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    field_validator,
    model_validator,
)

from providers.errors import KeySource

if TYPE_CHECKING:
    from emulator.settings import EmulatorOptions


def emulator_options(value: object) -> EmulatorOptions | None:
    """An `emulator` block read by the emulator's own schema, which is imported here, when a
    backend has such a block: a config without one never loads an emulator module."""
    if value is None:
        return None
    from emulator.settings import EmulatorOptions

    if isinstance(value, EmulatorOptions):
        return value
    try:
        return EmulatorOptions.model_validate(value)
    except ValidationError as exc:
        raise ValueError(_problems(exc)) from None


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or '(block)'}: {e['msg']}" for e in exc.errors()
    )


if TYPE_CHECKING:
    EmulatorBlock: TypeAlias = EmulatorOptions | None
else:
    EmulatorBlock = Annotated[object, PlainValidator(emulator_options)]
"""The type of an `emulator` block: `EmulatorOptions`, validated when present (see
`emulator_options`); mypy sees the options, pydantic the lazy validator."""

BackendKind = Literal[
    "openai-compatible",
    "vllm",
    "sglang",
    "llama-cpp",
    "ollama",
    "openai",
    "emulated",
    "anthropic",
    "gemini",
    "azure-openai",
]

PresetName = Literal[
    "openai",
    "deepseek",
    "together",
    "fireworks",
    "groq",
    "mistral",
    "openrouter",
    "vllm",
    "sglang",
    "llama-cpp",
    "ollama",
]
"""The OpenAI-compatible services with known defaults (`providers.presets.PRESETS`)."""

OPENAI_COMPATIBLE_KINDS: frozenset[BackendKind] = frozenset(
    {"openai-compatible", "vllm", "sglang", "llama-cpp", "ollama", "openai"}
)
"""The kinds served as they are by the OpenAI-compatible adapter, over the network."""

EMULATOR_KINDS: frozenset[BackendKind] = frozenset({"emulated", "anthropic", "gemini"})
"""The kinds an emulator started on loopback can stand in for: `emulated` (OpenAI's wire)
and the native formats it also speaks, each then reached through its own adapter."""

NATIVE_BASE_URLS: Mapping[BackendKind, str] = MappingProxyType(
    {
        "anthropic": "https://api.anthropic.com/v1",
        "gemini": "https://generativelanguage.googleapis.com/v1beta",
    }
)
"""The native kinds' own services, where a backend of that kind without `base_url` (and
without an emulator standing in) goes, as kind openai's preset goes to api.openai.com."""

KEYED_KINDS: frozenset[BackendKind] = frozenset({"anthropic", "gemini", "azure-openai"})
"""The kinds whose service takes a key (unless an emulator stands in for it); of the
OpenAI-compatible kinds, those whose preset's `auth` is `bearer` (`providers.presets`)."""

RESERVED_HEADERS = frozenset(
    {"authorization", "api-key", "x-api-key", "x-goog-api-key", "content-type", "host"}
    | {"content-length", "accept-encoding", "transfer-encoding", "connection"}
)
"""Headers the adapter owns: the key travels in `api_key`, the framing is the transport's."""

DEFAULT_IDLE_KEEPALIVE_S = 4.0
"""Idle connections to engines are closed after this, before the engines close them
(uvicorn, hence vLLM and SGLang, and llama.cpp: 5 s)."""

HttpClient = Literal["lean", "aiohttp"]
"""Which client carries a backend's requests: `lean`, Switchyard's keep-alive HTTP/1.1
client for `http://` URLs and their health probes (`providers.transport.h1_client`;
`https://` on aiohttp), or `aiohttp` for everything."""


class ProviderSettings(BaseModel):
    """One backend as its adapter sees it; the host builds it from its own config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    kind: BackendKind = "openai-compatible"
    base_url: str | None = Field(
        None,
        description="The OpenAI base URL; None when an emulator is started (kind `emulated`, "
        "or `emulator` set), whose engine picks a port.",
    )
    api_key: str | None = Field(
        None,
        repr=False,
        description="Sent as each kind's provider expects: a bearer token, or `x-api-key` "
        "(anthropic), `x-goog-api-key` (gemini), `api-key` (azure-openai).",
    )
    api_key_env: str | None = Field(
        None,
        description="The environment variable `api_key` was read from: its name only, which "
        "the backend's refusals of the key name (`KeySource`); None: the host names none.",
    )
    models: tuple[str, ...] = ()
    max_connections: int = Field(256, ge=1)
    idle_keepalive_s: float = Field(DEFAULT_IDLE_KEEPALIVE_S, gt=0)
    http_client: HttpClient = "lean"
    emulator: EmulatorBlock = Field(
        None,
        description="Kind `emulated`: how its engine behaves (defaults when None); kinds "
        "`anthropic` and `gemini`: start an emulator speaking that format instead of "
        "reaching the provider (`providers.emulated`).",
    )
    api_version: str | None = Field(
        None,
        min_length=1,
        description="`azure-openai` only: the api-version query parameter "
        "(None: the adapter's default, providers.azure.DEFAULT_API_VERSION).",
    )
    preset: PresetName | None = Field(
        None,
        description="OpenAI-compatible kinds: whose defaults `providers.presets."
        "with_preset_defaults` fills in; kinds vllm, sglang, llama-cpp, ollama and openai "
        "imply their own, so only kind openai-compatible names another.",
    )
    extra_headers: dict[str, str] = Field(
        default_factory=dict,
        repr=False,
        description="OpenAI-compatible kinds: sent with every request as given, e.g. "
        "OpenRouter's optional `HTTP-Referer` and `X-Title`; none by default.",
    )
    health_url: str | None = Field(
        None,
        pattern=r"^https?://",
        description="OpenAI-compatible kinds: what the health probe GETs "
        "(None: `{base_url}/models`; a preset fills in its engine's own).",
    )

    @field_validator("extra_headers")
    @classmethod
    def _check_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        reserved = sorted(name for name in headers if name.lower() in RESERVED_HEADERS)
        if reserved:
            raise ValueError(f"set by the adapter, not here: {', '.join(reserved)}")
        return headers

    @property
    def key_source(self) -> KeySource:
        """Where the key came from, as the adapter's refusals name it."""
        return KeySource.of(self.api_key, self.api_key_env)

    @property
    def emulated(self) -> bool:
        """Whether opening starts an emulator for this backend (`providers.emulated`)."""
        return self.kind == "emulated" or self.emulator is not None

    @model_validator(mode="after")
    def _check_emulator(self) -> ProviderSettings:
        if self.emulator is not None and self.kind not in EMULATOR_KINDS:
            raise ValueError(
                f"emulator: only for kinds emulated, anthropic and gemini, not {self.kind}"
            )
        return self

    @model_validator(mode="after")
    def _check_openai_compatible_fields(self) -> ProviderSettings:
        if self.kind in OPENAI_COMPATIBLE_KINDS:
            if self.preset is not None and self.kind not in ("openai-compatible", self.preset):
                raise ValueError(f"preset: kind {self.kind} is its own preset")
            return self
        for field in ("preset", "extra_headers", "health_url"):
            if field in self.model_fields_set and getattr(self, field):
                raise ValueError(f"{field}: only for OpenAI-compatible kinds, not {self.kind}")
        return self

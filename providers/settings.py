"""What a provider adapter is opened with: one backend's address, credentials and limits."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from emulator.settings import EmulatorOptions

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

DEFAULT_IDLE_KEEPALIVE_S = 4.0
"""Idle connections to engines are closed after this, before the engines close them
(uvicorn, hence vLLM and SGLang, and llama.cpp: 5 s)."""


class ProviderSettings(BaseModel):
    """One backend as its adapter sees it; the host builds it from its own config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    kind: BackendKind = "openai-compatible"
    base_url: str | None = Field(
        None, description="The OpenAI base URL; None for `emulated`, whose engine picks a port."
    )
    api_key: str | None = Field(
        None,
        repr=False,
        description="Sent as each kind's provider expects: a bearer token, or `x-api-key` "
        "(anthropic), `x-goog-api-key` (gemini), `api-key` (azure-openai).",
    )
    models: tuple[str, ...] = ()
    max_connections: int = Field(256, ge=1)
    idle_keepalive_s: float = Field(DEFAULT_IDLE_KEEPALIVE_S, gt=0)
    emulator: EmulatorOptions | None = Field(
        None, description="`emulated` only: how its engine behaves (defaults when None)."
    )
    api_version: str | None = Field(
        None,
        min_length=1,
        description="`azure-openai` only: the api-version query parameter "
        "(None: the adapter's default, providers.azure.DEFAULT_API_VERSION).",
    )

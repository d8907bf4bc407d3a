"""Typed gateway configuration, loaded from YAML and validated at start-up."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

BackendKind = Literal[
    "openai-compatible", "vllm", "sglang", "llama-cpp", "ollama", "openai", "emulated"
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TimeoutsConfig(_Strict):
    """Dispatch deadlines, all in seconds."""

    connect_s: float = Field(5.0, gt=0)
    first_token_s: float = Field(60.0, gt=0, description="Until the first response byte.")
    between_chunks_s: float = Field(60.0, gt=0, description="Max silence inside a stream.")
    total_s: float = Field(600.0, gt=0, description="Whole request, first attempt to last byte.")


class RetryConfig(_Strict):
    max_attempts: int = Field(3, ge=1, le=16, description="Backends tried per request.")
    max_retry_after_s: float = Field(
        2.0, ge=0, description="Longest Retry-After we wait out before the next candidate."
    )


class HealthConfig(_Strict):
    consecutive_failures: int = Field(3, ge=1, description="Failures before ejection.")
    ejection_base_s: float = Field(5.0, gt=0)
    ejection_max_s: float = Field(120.0, gt=0)
    active_probes: bool = Field(True, description="Probe every backend's /models periodically.")
    probe_interval_s: float = Field(10.0, gt=0, description="Active health check period.")
    probe_timeout_s: float = Field(2.0, gt=0)


class EmulatorOptions(_Strict):
    """Speed of an in-process emulated engine (kind: emulated)."""

    token_delay_ms: float = Field(5.0, ge=0)
    base_latency_ms: float = Field(0.0, ge=0)
    prefill_ms_per_1k_tokens: float = Field(0.0, ge=0)
    time_scale: float = Field(1.0, gt=0)


class BackendConfig(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    kind: BackendKind = "openai-compatible"
    base_url: str | None = Field(
        None, pattern=r"^https?://", description="Required unless kind is emulated."
    )
    emulator: EmulatorOptions | None = None
    api_key_env: str | None = Field(
        None, description="Name of the environment variable holding the key; never the key."
    )
    models: list[str] = Field(min_length=1)
    max_concurrency: int = Field(64, ge=1)
    max_connections: int = Field(256, ge=1)
    timeouts: TimeoutsConfig | None = None

    @model_validator(mode="after")
    def _check_address(self) -> BackendConfig:
        if self.kind == "emulated":
            if self.base_url is not None:
                raise ValueError("base_url: an emulated backend is started on a free port")
        elif self.base_url is None:
            raise ValueError("base_url: required for this kind of backend")
        elif self.emulator is not None:
            raise ValueError("emulator: only for kind emulated")
        return self

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


class RouteConfig(_Strict):
    name: str = Field(min_length=1, description="What clients send as `model`.")
    model: str = Field(min_length=1, description="Upstream model name.")
    backends: list[str] = Field(min_length=1)
    profile: str = "balanced"


class PolicyConfig(_Strict):
    type: str = Field(min_length=1, description="Built-in type name or a dotted path.")
    name: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)


class PluginRef(_Strict):
    ref: str = Field(min_length=1, description="A policy's name, or a built-in type.")
    weight: float = Field(1.0, ge=0)


class ProfileConfig(_Strict):
    name: str = Field(min_length=1)
    plugins: list[PluginRef] = Field(min_length=1)


class ServerConfig(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    max_body_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    decision_ring_size: int = Field(4096, ge=1)
    log_queue_size: int = Field(10_000, ge=1)
    api_keys_env: str | None = Field(
        None, description="Env var with comma-separated client keys; unset means no auth."
    )


class Config(_Strict):
    server: ServerConfig = ServerConfig()
    timeouts: TimeoutsConfig = TimeoutsConfig()
    retry: RetryConfig = RetryConfig()
    health: HealthConfig = HealthConfig()
    backends: list[BackendConfig] = Field(min_length=1)
    routes: list[RouteConfig] = Field(min_length=1)
    policies: list[PolicyConfig] = Field(default_factory=list)
    profiles: list[ProfileConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _check_references(self) -> Config:
        _unique("backends", [b.name for b in self.backends])
        _unique("routes", [r.name for r in self.routes])
        _unique("policies", [p.name for p in self.policies])
        _unique("profiles", [p.name for p in self.profiles])
        backends = {b.name: b for b in self.backends}
        profiles = {p.name for p in self.profiles}
        for i, route in enumerate(self.routes):
            for j, name in enumerate(route.backends):
                if name not in backends:
                    raise ValueError(f"routes.{i}.backends.{j}: unknown backend {name!r}")
                if route.model not in backends[name].models:
                    raise ValueError(
                        f"routes.{i}.backends.{j}: backend {name!r} does not serve "
                        f"model {route.model!r}"
                    )
            if route.profile not in profiles:
                raise ValueError(f"routes.{i}.profile: unknown profile {route.profile!r}")
        return self

    def backend(self, name: str) -> BackendConfig:
        return next(b for b in self.backends if b.name == name)

    def timeouts_for(self, backend: str) -> TimeoutsConfig:
        return self.backend(backend).timeouts or self.timeouts


def _unique(section: str, names: list[str]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise ValueError(f"{section}.{i}.name: duplicate name {name!r}")
        seen.add(name)


class ConfigError(Exception):
    """A config file that cannot be used; `problems` name the YAML path of each error."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))


def parse_config(data: Any, source: str = "<config>") -> Config:
    if not isinstance(data, dict):
        raise ConfigError(source, ["(root): expected a mapping"])
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, [_describe(err) for err in exc.errors()]) from None


def load_config(path: str | Path) -> Config:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(source, [f"(file): {exc.strerror}"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(source, [f"(yaml): {exc}"]) from None
    return parse_config(data, source)


def _describe(err: Any) -> str:
    """Render one pydantic error as `yaml.path: message`."""
    loc = ".".join(str(part) for part in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    head, sep, rest = msg.partition(": ")
    # Our validators prefix their messages with the path below the model they check.
    if sep and " " not in head:
        return f"{loc}.{head}: {rest}" if loc else f"{head}: {rest}"
    return f"{loc or '(root)'}: {msg}"

"""Typed gateway configuration, loaded from YAML and validated at start-up."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, TypeAdapter, ValidationError, model_validator

from gateway.admission.config import FlowControlConfig
from gateway.cascade.config import CascadeConfig, cascade_problems
from gateway.config.backends import BackendConfig
from gateway.config.bounds import BoundsConfig
from gateway.config.clients import ClientsConfig
from gateway.config.default_profile import with_builtin_profile
from gateway.config.demo import DemoConfig
from gateway.config.redis import RedisNamespace, RedisSettings, RedisUrl
from gateway.config.references import demo_problems, limit_problems
from gateway.config.routes import RouteConfig as RouteConfig  # re-exported: the YAML schema
from gateway.config.routes import SlaConfig as SlaConfig
from gateway.config.routes import route_problems
from gateway.config.strict import StrictConfig
from gateway.errors import ConfigError
from gateway.quality.config import QualityConfig
from gateway.store.config import StoreConfig
from gateway.telemetry.config import TelemetryConfig
from gateway.tenancy.config import BudgetsConfig, KeysConfig, LimitsConfig, budget_problems
from gateway.tracing.config import TracingConfig
from policies.config import PolicyConfig, ProfileConfig
from policies.profiles import pipeline_problems
from policies.strict_model import did_you_mean


class TimeoutsConfig(StrictConfig):
    """Dispatch deadlines, all in seconds."""

    connect_s: float = Field(5.0, gt=0)
    first_token_s: float = Field(60.0, gt=0, description="Until the first response byte.")
    between_chunks_s: float = Field(60.0, gt=0, description="Max silence inside a stream.")
    total_s: float = Field(600.0, gt=0, description="Whole request, first attempt to last byte.")


class RetryConfig(StrictConfig):
    max_attempts: int = Field(3, ge=1, le=16, description="Backends tried per request.")
    max_retry_after_s: float = Field(
        2.0, ge=0, description="Longest Retry-After we wait out before the next candidate."
    )


class HealthConfig(StrictConfig):
    consecutive_failures: int = Field(3, ge=1, description="Failures before ejection.")
    ejection_base_s: float = Field(5.0, gt=0)
    ejection_max_s: float = Field(120.0, gt=0)
    active_probes: bool = Field(True, description="Probe every backend's /models periodically.")
    probe_interval_s: float = Field(10.0, gt=0, description="Active health check period.")
    probe_timeout_s: float = Field(2.0, gt=0)


class ServerConfig(StrictConfig):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    max_body_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    decision_ring_size: int = Field(4096, ge=1)
    keep_alive_s: int = Field(
        75,
        ge=1,
        description="Idle client connections are kept open this long. Longer than clients "
        "keep idle pooled connections (OpenAI SDK and httpx: 5 s, aiohttp: 15 s), so that "
        "a client never reuses one the gateway is closing (a reset request).",
    )
    clients: ClientsConfig = Field(
        ClientsConfig(),
        description="How long a client may take to send its request; how many connections "
        "a process keeps open.",
    )
    log_queue_size: int = Field(10_000, ge=1)
    api_keys_env: str | None = Field(
        None, description="Env var with comma-separated client keys; unset means no auth."
    )
    admin_keys_env: str | None = Field(
        None, description="Env var with comma-separated admin keys (admin API, operator data)."
    )
    metrics_token_env: str | None = Field(
        None, description="Env var with the bearer token /metrics needs; unset: /metrics open."
    )
    allow_unauthenticated: bool = Field(
        False, description="Serve a non-loopback address without client keys (refused else)."
    )
    shutdown_drain_s: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="On SIGTERM/SIGINT, requests in flight may finish for this long; streams "
        "still open then end with an error event.",
    )
    gc_gen0_threshold: int = Field(
        20_000,
        ge=0,
        le=1_000_000,
        description="Served process: container allocations between young-generation "
        "collections (CPython's default 700; 0 keeps it). Fewer passes, less CPU per request.",
    )
    gc_freeze: bool = Field(
        True,
        description="Served process: leave the objects built at start-up out of every later "
        "garbage collection (gc.freeze), so full passes do not walk them.",
    )


class StateConfig(StrictConfig):
    """Where routing state lives: this process only, or shared by replicas through Redis.

    With `redis`, each replica still routes on its own in-process state; a background task
    publishes its prefix inserts and load counters and folds in the other replicas'.
    """

    backend: Literal["local", "redis"] = "local"
    redis_url: RedisUrl = Field(
        "redis://127.0.0.1:6379/0",
        description="Credentials may be in the URL; logs show it without them.",
    )
    namespace: RedisNamespace = Field("switchyard", description="Key prefix.")
    publish_interval_ms: float = Field(100.0, ge=5, description="Sync period.")
    queue_size: int = Field(10_000, ge=1, description="Prefix inserts waiting to be published.")
    load_ttl_s: float = Field(2.0, gt=0, description="A silent replica's load expires after it.")
    command_timeout_ms: float = Field(500.0, gt=0, description="Connect and command timeout.")
    reconnect_max_s: float = Field(5.0, gt=0, description="Cap on the reconnect back-off.")
    share_health: bool = Field(
        True, description="Share ejections, 429 cool-downs and probe results with peers."
    )
    share_quality: bool = Field(True, description="Share quality ejections and restores.")
    share_tenants: bool = Field(
        True,
        description="With flow_control.enabled: share each tenant's service, so that "
        "fairness between tenants is fleet-wide.",
    )
    prober_lease: bool = Field(
        True, description="One replica of the namespace runs the active probes, by lease."
    )
    prober_lease_ttl_s: float = Field(
        3.0, gt=0, le=600, description="A dead prober's lease passes on within about this."
    )
    peer_event_max_age_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="A peer's verdict older (or further ahead, clock skew) than this is ignored.",
    )

    @model_validator(mode="after")
    def _check_ttl(self) -> StateConfig:
        if self.load_ttl_s * 1000 < 2 * self.publish_interval_ms:
            raise ValueError("load_ttl_s: must be at least twice publish_interval_ms")
        if self.prober_lease_ttl_s * 1000 < 3 * self.publish_interval_ms:
            raise ValueError("prober_lease_ttl_s: must be at least 3 publish_interval_ms")
        return self

    def redis_settings(self) -> RedisSettings:
        url, namespace, timeout_ms = self.redis_url, self.namespace, self.command_timeout_ms
        return RedisSettings(url=url, namespace=namespace, timeout_ms=timeout_ms)


class Config(StrictConfig):
    server: ServerConfig = ServerConfig()
    bounds: BoundsConfig = BoundsConfig()
    timeouts: TimeoutsConfig = TimeoutsConfig()
    retry: RetryConfig = RetryConfig()
    health: HealthConfig = HealthConfig()
    backends: list[BackendConfig] = Field(min_length=1)
    routes: list[RouteConfig] = Field(min_length=1)
    policies: list[PolicyConfig] = Field(default_factory=list)
    profiles: list[ProfileConfig] = Field(
        min_length=1,
        description="Left out: the built-in cache-aware profile (`default_profile.py`).",
    )
    state: StateConfig = StateConfig()
    quality: QualityConfig = QualityConfig()
    store: StoreConfig = StoreConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    tracing: TracingConfig = TracingConfig()
    demo: DemoConfig = DemoConfig()
    keys: KeysConfig = KeysConfig()
    limits: LimitsConfig = LimitsConfig()
    budgets: BudgetsConfig = BudgetsConfig()
    flow_control: FlowControlConfig = FlowControlConfig()
    cascades: list[CascadeConfig] = Field(
        default_factory=list, description="Models that try cheap tiers first (cascades)."
    )

    @model_validator(mode="before")
    @classmethod
    def _builtin_profile(cls, data: Any) -> Any:
        return with_builtin_profile(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _check_references(self) -> Config:
        problems = reference_problems(self.backends, self.routes, self.policies, self.profiles)
        problems += demo_problems(self.routes, self.demo)
        problems += limit_problems(self.routes, self.limits)
        problems += budget_problems({r.name: r.fallbacks for r in self.routes}, self.budgets)
        problems += cascade_problems(self.cascades, {r.name for r in self.routes})
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def clients_need_keys(self) -> bool:
        """Whether clients must present a key: static keys (`server.api_keys_env`) or the
        store's virtual keys (`keys.enabled`)."""
        return bool(self.server.api_keys_env) or self.keys.enabled

    @property
    def demo_traffic_on(self) -> bool:
        """Whether demo traffic runs: asked for, and no client key needed. The demo sends
        no key, so with keys on it stays off rather than be refused (`invalid_api_key`)."""
        return self.demo.traffic_rps > 0 and not self.clients_need_keys

    def redis_for(self, section: Literal["state", "limits", "budgets"]) -> RedisSettings:
        """The Redis that a section's state lives in: the section's own namespace and
        timeout, at the first `redis_url` set along budgets → limits → state."""
        if section == "budgets":
            return self.budgets.redis_settings(self.limits.redis_url or self.state.redis_url)
        if section == "limits":
            return self.limits.redis_settings(self.state.redis_url)
        return self.state.redis_settings()

    def profile_of(self, route: RouteConfig) -> str:
        """The profile that decides `route`'s requests: its own, else the first declared
        (the built-in cache-aware one when the config declares none)."""
        return route.profile or self.profiles[0].name

    def backend(self, name: str) -> BackendConfig:
        return next(b for b in self.backends if b.name == name)

    @cached_property
    def backend_kinds(self) -> dict[str, str]:
        """Each backend's kind by name (what a trace names as the provider)."""
        return {b.name: b.kind for b in self.backends}

    def timeouts_for(self, backend: str) -> TimeoutsConfig:
        own = self.backend(backend).timeouts
        if own is None:
            return self.timeouts
        return self.timeouts.model_copy(update=own.model_dump(exclude_none=True))


def reference_problems(
    backends: list[BackendConfig] | None,
    routes: list[RouteConfig] | None,
    policies: list[PolicyConfig] | None,
    profiles: list[ProfileConfig] | None,
) -> list[str]:
    """Every broken cross-reference; a section that failed validation is passed as None."""
    problems: list[str] = []
    for section, items in (
        ("backends", backends),
        ("routes", routes),
        ("policies", policies),
        ("profiles", profiles),
    ):
        problems += _duplicates(section, [item.name for item in items or []])
    if routes is None:
        return problems
    profile_names = {p.name for p in profiles} if profiles is not None else None
    return problems + route_problems(routes, backends, profile_names)


def _duplicates(section: str, names: list[str]) -> list[str]:
    seen: set[str] = set()
    problems = []
    for i, name in enumerate(names):
        if name in seen:
            problems.append(f"{section}.{i}.name: duplicate name {name!r}")
        seen.add(name)
    return problems


def parse_config(data: Any, source: str = "<config>") -> Config:
    """Validate a whole config and report every problem at once, each with its YAML path."""
    if not isinstance(data, dict):
        raise ConfigError(source, ["(root): expected a mapping"])
    data = with_builtin_profile(data)
    sections, problems = _validate_sections(data)

    def section(name: str) -> Any:
        if name in sections:
            return sections[name]
        info = Config.model_fields[name]
        if name in data or info.is_required():  # invalid or missing: nothing to check
            return None
        return info.get_default(call_default_factory=True)

    problems += reference_problems(
        section("backends"), section("routes"), section("policies"), section("profiles")
    )
    policies, profiles = section("policies"), section("profiles")
    if policies is not None and profiles is not None:
        problems += pipeline_problems(policies, profiles)
    problems += demo_problems(section("routes"), section("demo"))
    problems += limit_problems(section("routes"), section("limits"))
    routes, budgets = section("routes"), section("budgets")
    if routes is not None and budgets is not None:
        problems += budget_problems({r.name: r.fallbacks for r in routes}, budgets)
    route_names = {r.name for r in routes} if routes is not None else None
    problems += cascade_problems(section("cascades"), route_names)
    if problems:
        raise ConfigError(source, problems)
    return Config.model_validate(sections)


def _validate_sections(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Each top-level section on its own, so one bad section does not hide the others."""
    fields = Config.model_fields
    problems = [
        f"{key}: Extra inputs are not permitted{did_you_mean(str(key), fields)}"
        for key in data
        if key not in fields
    ]
    sections: dict[str, Any] = {}
    for name, info in fields.items():
        if name not in data:
            if info.is_required():
                problems.append(f"{name}: Field required")
            continue
        # The FieldInfo carries the section's own constraints (min_length, ...).
        section_type: Any = Annotated[info.annotation, info]
        adapter: TypeAdapter[Any] = TypeAdapter(section_type)
        try:
            sections[name] = adapter.validate_python(data[name])
        except ValidationError as exc:
            problems += [line for err in exc.errors() for line in _describe(err, prefix=name)]
    return sections, problems


def load_config(path: str | Path) -> Config:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(source, [f"(file): {exc.strerror}"]) from None
    return parse_yaml(text, source)


def parse_yaml(text: str, source: str) -> Config:
    """A config file's text, validated (`source` names it in the problems)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(source, [f"(yaml): {_yaml_problem(exc, source)}"]) from None
    return parse_config(data, source)


def _yaml_problem(exc: yaml.YAMLError, source: str) -> str:
    """One line naming the file, line and column (`FILE:LINE:COLUMN: problem`), where
    PyYAML's own text names `<unicode string>` over several lines."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return " ".join(str(exc).split())
    mark, problem = exc.problem_mark, exc.problem or "not valid YAML"
    text = f"{source}:{mark.line + 1}:{mark.column + 1}: {problem}"
    if exc.context and exc.context_mark is not None:
        at = exc.context_mark
        text += f" ({exc.context} from line {at.line + 1}, column {at.column + 1})"
    elif exc.context:
        text += f" ({exc.context})"
    return text


def _describe(err: Any, prefix: str = "") -> list[str]:
    """Render one pydantic error as `yaml.path: message`; a validator's message of several
    lines (one problem each) as as many problems, each with its path."""
    loc = ".".join(str(part) for part in (prefix, *err["loc"]) if part != "")
    msg = str(err["msg"]).removeprefix("Value error, ")
    return [_one_problem(loc, line) for line in msg.split("\n")]


def _one_problem(loc: str, msg: str) -> str:
    head, sep, rest = msg.partition(": ")
    # Our validators prefix their messages with the path below the model they check.
    if sep and " " not in head:
        return f"{loc}.{head}: {rest}" if loc else f"{head}: {rest}"
    return f"{loc or '(root)'}: {msg}"

"""Routing targets of a replay: gateway profiles by name, a user's config, SGLang's router.

To compare another gateway policy, add an entry to `PROFILES`: the plugin list of its
profile and any policies it declares with parameters (exactly as in a config file).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml


@dataclass(frozen=True)
class GatewayProfile:
    plugins: list[dict[str, Any]]
    policies: list[dict[str, Any]] = field(default_factory=list)
    flow_control: Callable[[FleetRoute], dict[str, Any]] | None = None
    """The config's `flow_control` section for a fleet (its thresholds in the fleet's
    wall-clock units); None: the default (deadlines only)."""
    route_sla: tuple[str, ...] = ()
    """The run's SLOs the route gets as its `sla` (`ttft_ms`, `tpot_ms`): with a TTFT
    target flow control's deadlines apply to every request, with a TPOT target its TPOT
    gate (without either only the hybrid fleet's route has an SLA)."""
    scrape: bool = False
    """Scrape each engine's `/metrics` (running, waiting, KV use) for the saturation
    detector."""
    spill_to_cloud: bool = False
    """The hybrid fleet as two routes: the trace's route over the local engines only,
    falling back to a `<route>-cloud` route over the clouds (both with this profile), so
    flow control moves a request that cannot start locally in time to the clouds."""


def _pipeline(*scorers: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"ref": "healthy-filter"}, *scorers, {"ref": "max-score-picker"}]


def _cache_aware(bounds: list[str], kv_cost: str) -> list[dict[str, Any]]:
    """The cache-aware plugin list with the given load bounds and kv-cost policy."""
    return [
        {"ref": "healthy-filter"},
        *({"ref": bound} for bound in bounds),
        {"ref": "sla-filter"},
        {"ref": kv_cost, "weight": 3.0},
        {"ref": "prefix-cache-scorer", "weight": 1.0},
        {"ref": "load-scorer", "weight": 1.0},
        {"ref": "max-score-picker"},
    ]


PROFILES: dict[str, GatewayProfile] = {
    "round-robin": GatewayProfile(_pipeline({"ref": "round-robin-scorer"})),
    "least-load": GatewayProfile(_pipeline({"ref": "least-load-scorer"})),
    # The embedded default's cache-aware profile (gateway/examples/embedded.yaml), less its
    # quality-, placement- and context-window filters: a replay's engines have no faults,
    # tags or windows, so each of them would keep every backend.
    "cache-aware": GatewayProfile(
        _cache_aware([], "kv-cost"),
        [
            {
                "type": "kv-cost-scorer",
                "name": "kv-cost",
                "params": {"work_weight": 1.0, "delay_weight": 1.0},
            }
        ],
    ),
    # The default until issue 13: both load bounds, no delay_weight.
    "cache-aware-bounded": GatewayProfile(
        _cache_aware(["bounded-prefill", "bounded-requests"], "kv-cost"),
        [
            {"type": "bounded-load-filter", "name": "bounded-prefill", "params": {"by": "tokens"}},
            {
                "type": "bounded-load-filter",
                "name": "bounded-requests",
                "params": {"by": "requests", "min_in_flight": 4},
            },
            {"type": "kv-cost-scorer", "name": "kv-cost", "params": {"work_weight": 1.0}},
        ],
    ),
    # The same before work_weight and the prefill bound: every request for itself.
    "cache-aware-greedy": GatewayProfile(_cache_aware(["bounded-load-filter"], "kv-cost-scorer")),
    # Baselines of the hybrid fleet (`--fleet hybrid`): the price list alone, caches ignored...
    "cheapest-price": GatewayProfile(
        [
            {"ref": "healthy-filter"},
            {"ref": "context-window-filter"},
            {"ref": "list-price", "weight": 1.0},
            {"ref": "max-score-picker"},
        ],
        [{"type": "cost-scorer", "name": "list-price", "params": {"use_cache": False}}],
    ),
    # ...and the cheapest backend predicted to meet the SLA and the quality floor, counting
    # the prompt tokens each is predicted to hold cached; among equal prices, the
    # cache-aware profile's scorers.
    "cost-aware": GatewayProfile(
        [
            {"ref": "healthy-filter"},
            {"ref": "context-window-filter"},
            {"ref": "quality-filter"},
            {"ref": "sla-filter"},
            {"ref": "cost-scorer", "weight": 3.0},
            {"ref": "kv-cost", "weight": 1.0},
            {"ref": "prefix-cache-scorer", "weight": 1.0},
            {"ref": "load-scorer", "weight": 1.0},
            {"ref": "max-score-picker"},
        ],
        [
            {
                "type": "kv-cost-scorer",
                "name": "kv-cost",
                "params": {"work_weight": 1.0, "delay_weight": 1.0},
            }
        ],
    ),
}
# Flow control (issue 35) over the default cache-aware profile: with the run's SLOs as the
# route's SLA, a request that cannot start in time is refused (429) before its deadline;
# `-fc` also holds every request while the engines are full, in the gateway's queue.
_CACHE_AWARE = PROFILES["cache-aware"]
_BOTH = ("ttft_ms", "tpot_ms")
PROFILES["cache-aware-deadline"] = GatewayProfile(
    _CACHE_AWARE.plugins, _CACHE_AWARE.policies, route_sla=_BOTH
)
# The same, a stream whose first token has not come by its deadline ended there (429).
PROFILES["cache-aware-deadline-cut"] = GatewayProfile(
    _CACHE_AWARE.plugins,
    _CACHE_AWARE.policies,
    flow_control=lambda fleet: {"cut_at_deadline": True},
    route_sla=_BOTH,
)


def _holding(fleet: FleetRoute) -> dict[str, Any]:
    """Hold every request while the engines are full: a backend is full with more prefill
    queued than half the TTFT SLO, a request waiting inside it or 90 % of its KV held.
    Within a band: shortest prefill first, then cache value, then age."""
    ttft_ms = fleet.slo.get("ttft_ms", 2000.0)
    return {
        "enabled": True,
        "max_wait_s": 3600,
        "saturation": {"max_queued_prefill_ms": ttft_ms / 2},
        "order": [
            {"type": "short-prefill-order", "weight": 2.0},
            {"type": "cache-affinity-order", "weight": 1.0},
            {"type": "fair-share-order", "weight": 1.0},
            {"type": "age-order", "weight": 0.5},
        ],
    }


PROFILES["cache-aware-fc"] = GatewayProfile(
    _CACHE_AWARE.plugins, _CACHE_AWARE.policies, flow_control=_holding, scrape=True
)


# The same holding with the TPOT SLO as the route's target: no backend takes a request
# while it decodes slower than that. Interactive first; a batch request fills 0.3 of each
# limit and of the TPOT target (tuned on mix seed 7: interactive goodput 36 % at 0.8,
# 60 % at 0.5, 82 % at 0.3), so the interactive class finds room while batch waits; no
# TTFT target, so nothing is shed. A tenant over its share fills half of what its class
# may (flow control's default).
def _classes(fleet: FleetRoute) -> dict[str, Any]:
    classes = [
        {"name": "interactive", "band": 0},
        {"name": "standard", "band": 1},
        {"name": "batch", "band": 2, "headroom": 0.3},
    ]
    return {**_holding(fleet), "classes": classes}


PROFILES["cache-aware-classes"] = GatewayProfile(
    _CACHE_AWARE.plugins,
    _CACHE_AWARE.policies,
    flow_control=_classes,
    route_sla=("tpot_ms",),
    scrape=True,
)
# The same without tenant isolation: a tenant over its share may fill all its class may.
PROFILES["cache-aware-classes-shared"] = GatewayProfile(
    _CACHE_AWARE.plugins,
    _CACHE_AWARE.policies,
    flow_control=lambda fleet: {**_classes(fleet), "tenants": {"over_share_headroom": 1.0}},
    route_sla=("tpot_ms",),
    scrape=True,
)
# The hybrid fleet with flow control's deadlines: local engines first; a request that cannot
# start there within the route's TTFT SLA moves to the clouds' route before its deadline.
_COST_AWARE = PROFILES["cost-aware"]
PROFILES["cost-aware-fc"] = GatewayProfile(
    _COST_AWARE.plugins, _COST_AWARE.policies, route_sla=_BOTH, spill_to_cloud=True
)
SGLANG = "sglang"
DEFAULT_POLICIES = ("round-robin", "least-load", "cache-aware", SGLANG)
HYBRID_POLICIES = ("round-robin", "cheapest-price", "cost-aware")

TargetKind = Literal["profile", "config", "sglang"]


@dataclass(frozen=True)
class Target:
    """One row of the report: what requests go through."""

    name: str
    kind: TargetKind
    profile: GatewayProfile | None = None
    config_path: Path | None = None


def targets_from(policies: list[str], config_path: Path | None) -> list[Target]:
    """Targets named by `--policies` (unknown names raise ValueError), then `--config`."""
    targets = []
    for name in policies:
        if name == SGLANG:
            targets.append(Target(name, "sglang"))
        elif name in PROFILES:
            targets.append(Target(name, "profile", profile=PROFILES[name]))
        else:
            known = ", ".join([*PROFILES, SGLANG])
            raise ValueError(f"unknown policy {name!r} (known: {known})")
    if config_path is not None:
        targets.append(Target(f"config:{config_path.stem}", "config", config_path=config_path))
    return targets


@dataclass(frozen=True)
class FleetRoute:
    """How the gateway reaches the fleet: backend names, their URLs, the upstream model."""

    route: str
    model: str
    backends: dict[str, str]
    ring_size: int
    cache: dict[str, Any] = field(default_factory=dict)
    """The backends' `cache` section: what the gateway may assume about the engines."""
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per backend, keys replacing the defaults of its entry (a hybrid fleet's kind,
    prices, cache, window)."""
    sla: dict[str, float] = field(default_factory=dict)
    """The route's `sla` (wall-clock ms), for `sla-filter`; empty: none."""
    slo: dict[str, float] = field(default_factory=dict)
    """The run's SLOs in wall-clock ms: the route's `sla` for a profile with `route_sla`."""


_SCRAPE = {"path": "/metrics", "interval_s": 0.2, "timeout_s": 0.5, "stale_after_s": 1.0}
"""Engine `/metrics` every 0.2 s of wall time (0.8 s of trace time at the calibrated
scale of 0.25)."""


def _backends(fleet: FleetRoute) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "base_url": f"{url}/v1",
            "models": [fleet.model],
            "max_concurrency": 4096,
            "cache": fleet.cache,
            **fleet.entries.get(name, {}),
        }
        for name, url in fleet.backends.items()
    ]


def _server(port: int, fleet: FleetRoute) -> dict[str, Any]:
    return {"host": "127.0.0.1", "port": port, "decision_ring_size": fleet.ring_size}


# A replay measures routing, not failover: long deadlines, no prober traffic.
_TIMEOUTS = {"first_token_s": 3600, "between_chunks_s": 600, "total_s": 7200}


def profile_config(profile: GatewayProfile, fleet: FleetRoute, port: int) -> dict[str, Any]:
    route: dict[str, Any] = {
        "name": fleet.route,
        "model": fleet.model,
        "backends": list(fleet.backends),
    }
    sla = fleet.sla or {k: v for k, v in fleet.slo.items() if k in profile.route_sla}
    if sla:
        route["sla"] = sla
    backends = _backends(fleet)
    if profile.scrape:
        backends = [{**b, "metrics": _SCRAPE} for b in backends]
    routes = [{**route, "profile": "replay"}]
    if profile.spill_to_cloud:
        routes = _local_then_cloud(routes[0])
    config: dict[str, Any] = {
        "server": _server(port, fleet),
        "timeouts": _TIMEOUTS,
        "health": {"active_probes": False},
        # Quality probes would add load on Switchyard's fleets only (SGLang has none).
        "quality": {"probes": {"enabled": False}},
        "backends": backends,
        "routes": routes,
        "policies": profile.policies,
        "profiles": [{"name": "replay", "plugins": profile.plugins}],
    }
    if profile.flow_control is not None:
        config["flow_control"] = profile.flow_control(fleet)
    return config


def _local_then_cloud(route: dict[str, Any]) -> list[dict[str, Any]]:
    """`route` over its `local-*` members, falling back to the rest as `<name>-cloud`."""
    local = [b for b in route["backends"] if b.startswith("local-")]
    cloud = [b for b in route["backends"] if not b.startswith("local-")]
    if not local or not cloud:
        raise ValueError("spilling to a cloud needs the hybrid fleet (`--fleet hybrid`)")
    spill = f"{route['name']}-cloud"
    return [
        {**route, "backends": local, "fallbacks": [spill]},
        {**route, "name": spill, "backends": cloud},
    ]


def user_config(path: Path, fleet: FleetRoute, port: int) -> dict[str, Any]:
    """A user's config with its backends replaced by the fleet.

    Policies, profiles, timeouts, retry and health stay as written; the route named
    `fleet.route` keeps its profile but serves the fleet; other routes are dropped.
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping")
    routes = [r for r in data.get("routes") or [] if isinstance(r, dict)]
    chosen = next((r for r in routes if r.get("name") == fleet.route), None)
    if chosen is None:
        raise ValueError(f"{path}: no route named {fleet.route!r} (see --route)")
    route = {**chosen, "model": fleet.model, "backends": list(fleet.backends)}
    server = {**(data.get("server") or {}), **_server(port, fleet)}
    return {**data, "server": server, "backends": _backends(fleet), "routes": [route]}

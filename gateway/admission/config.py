"""The `flow_control` section: priority classes, tenants, queue bounds, the order of a
queue and when a backend counts as full."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gateway.config.strict import StrictConfig
from gateway.fleet.saturation import SaturationConfig
from policies.order.config import DEFAULT_ORDER, OrderPluginConfig
from policies.order.pipeline import build_order
from policies.registry import PolicyConfigError

OnLate = Literal["fallback", "shed"]
TenantSource = Literal["key", "team", "header"]


class PriorityClass(StrictConfig):
    """A class of requests: its band in the queue and what happens when it is late."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    band: int = Field(ge=0, le=100, description="0 goes first; strict between bands.")
    sheddable: bool = Field(
        False, description="Never held: refused (or moved) at once when nothing has room."
    )
    on_late: OnLate = Field(
        "fallback",
        description="When it cannot start in time: the route's fallbacks if it has any "
        "(`fallback`), else a 429 with Retry-After; `shed`: always the 429.",
    )
    ttft_ms: float | None = Field(
        None, gt=0, description="Its TTFT target when neither the request nor its route set one."
    )
    headroom: float = Field(
        1.0,
        gt=0,
        le=1,
        description="The share of each limit this class may fill (the saturation detector's "
        "KV and prefill limits, the TPOT gate): below 1 keeps room for higher classes.",
    )
    keys: list[str] = Field(
        default_factory=list, description="Client key ids whose requests are of this class."
    )
    teams: list[str] = Field(
        default_factory=list, description="Teams whose keys' requests are of this class."
    )


def _default_classes() -> list[PriorityClass]:
    return [
        PriorityClass(name="interactive", band=0),
        PriorityClass(name="standard", band=1),
        PriorityClass(name="batch", band=2, headroom=0.8),
        PriorityClass(name="sheddable", band=3, sheddable=True, on_late="shed", headroom=0.6),
    ]


class TenantsConfig(StrictConfig):
    """Whom a request's service is accounted to, for weighted fairness."""

    by: list[TenantSource] = Field(
        default_factory=lambda: list[TenantSource](["key", "header"]),
        min_length=1,
        description="Sources tried in order: the client key's id, its team, the header.",
    )
    header: str = Field("x-switchyard-tenant", pattern=r"^[a-z0-9-]+$")
    weights: dict[str, float] = Field(
        default_factory=dict, description="A tenant's share of service relative to others."
    )
    default_weight: float = Field(1.0, gt=0)
    half_life_s: float = Field(60.0, gt=0, description="Service counted lately halves this often.")
    max_tenants: int = Field(10_000, ge=1, description="Tenants tracked; the stalest go first.")
    output_weight: float = Field(
        2.0, ge=0, description="Service per output token, input tokens counting 1."
    )
    over_share_headroom: float = Field(
        0.5,
        gt=0,
        le=1,
        description="With `enabled`: the share of a backend's limits a tenant may fill while "
        "it has had more than 1.25 x its weighted share of the recent service and another tenant "
        "was served within `half_life_s` (multiplies its class's `headroom`); 1: no limit "
        "beyond its class's.",
    )


class FlowControlConfig(StrictConfig):
    """Admission per route (docs/config.md#flow-control)."""

    enabled: bool = Field(
        False,
        description="Hold every request while no candidate has room. Off: only requests "
        "with a TTFT target are held, and only until a candidate can meet it.",
    )
    classes: list[PriorityClass] = Field(default_factory=_default_classes, min_length=1)
    default_class: str = "standard"
    priority_header: str = Field("x-switchyard-priority", pattern=r"^[a-z0-9-]+$")
    tenants: TenantsConfig = TenantsConfig()
    max_waiting: int = Field(1024, ge=1, description="Requests held per route at most.")
    max_wait_s: float = Field(
        30.0, gt=0, description="The longest a request without a TTFT target is held."
    )
    spill_after_s: float = Field(
        2.0,
        ge=0,
        description="With `enabled`: a held request waits for the backend its decision "
        "prefers (its cache is there) this long, or half its TTFT budget, before it may go "
        "to another backend with room.",
    )
    fallback_patience: float = Field(
        0.25,
        gt=0,
        le=1,
        description="With a TTFT target and a fallback route: the share of the time a held "
        "request could wait for its own route (until its fallback could no longer meet the "
        "target) that it does wait before it moves; 1: to the last moment, which the "
        "fallback's own variance then makes late as often as not.",
    )
    ageing_s: float | None = Field(
        10.0, gt=0, description="Each this long held lifts a request one band; null: never."
    )
    order: list[OrderPluginConfig] = Field(default_factory=lambda: list(DEFAULT_ORDER))
    saturation: SaturationConfig = SaturationConfig()
    cut_at_deadline: bool = Field(
        False,
        description="A stream with a TTFT target whose first token has not come by then "
        "is ended at its deadline (the engine's work cancelled) with a 429 "
        "`deadline_unmeetable`; off: one let through is served however late.",
    )
    recheck_ms: float = Field(
        50.0, gt=0, description="How often held requests are looked at when nothing changes."
    )

    @model_validator(mode="after")
    def _check_classes(self) -> FlowControlConfig:
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError("classes: each class name once")
        if self.default_class not in names:
            raise ValueError(f"default_class: {self.default_class!r} is not a class")
        try:
            build_order(self.order, ageing_s=self.ageing_s, path="order")
        except PolicyConfigError as exc:
            raise ValueError("\n".join(exc.problems)) from None
        return self

    def class_named(self, name: str) -> PriorityClass | None:
        return next((c for c in self.classes if c.name == name), None)

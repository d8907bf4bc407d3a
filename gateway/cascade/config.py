"""The `cascades` section: each cascade is a public model name, its tiers (routes,
cheapest first), the checks that send a request on, how streams are held, and the learned
starting tier."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from gateway.config.strict import StrictConfig


class CheckConfig(StrictConfig):
    """One answer check: a built-in's name (`gateway.cascade.checks.builtin`) or a user's
    function as `package.module:function`, and its params."""

    check: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        return {"check": data} if isinstance(data, str) else data


class CascadeStreamingConfig(StrictConfig):
    """How a streamed request meets the checks of a tier that is not the last."""

    mode: Literal["hold", "commit"] = Field(
        "hold",
        description="hold: the client's first byte waits until the tier's answer passed its "
        "checks (or `hold_tokens`/`hold_s` passed, then the checks that can judge a start "
        "judge it and the rest streams live); commit: the first content byte commits, and "
        "only a tier that fails or ends empty before it escalates.",
    )
    hold_tokens: int = Field(
        1024, ge=1, le=65_536, description="hold: output tokens held at most before committing."
    )
    hold_s: float = Field(
        30.0, gt=0, le=600, description="hold: seconds held at most before committing."
    )


class CascadeStartConfig(StrictConfig):
    """The learned starting tier: a kind of request that lately failed a tier's checks
    this often starts above it."""

    learned: bool = Field(True, description="Off: every request starts at the first tier.")
    failure_rate: float = Field(
        0.8, gt=0, le=1, description="Skip a tier whose decayed failure rate reaches this."
    )
    min_samples: float = Field(
        8.0, gt=0, description="Decayed attempts of the kind on the tier before it may be skipped."
    )
    half_life_s: float = Field(600.0, gt=0, description="Evidence halves in weight over this time.")
    explore: float = Field(
        0.05,
        ge=0,
        le=1,
        description="Share of skippable requests that try the skipped tier anyway, so a "
        "tier that got better is seen to.",
    )
    max_kinds: int = Field(
        4096, ge=1, le=1_000_000, description="Kinds remembered; the least recent go first."
    )


class JudgeConfig(StrictConfig):
    """A judge route asked whether a tier's answer is good enough."""

    route: str = Field(min_length=1)
    question: str = Field(
        "Does the answer fully and correctly answer the request? Reply yes or no.",
        min_length=1,
    )
    min_yes: float = Field(
        0.5, ge=0, le=1, description="The answer passes when P(yes) is at least this."
    )
    max_answer_chars: int = Field(
        8000, ge=1, le=200_000, description="Of the tier's answer, shown to the judge."
    )
    timeout_s: float = Field(10.0, gt=0, le=600)


class CascadeConfig(StrictConfig):
    name: str = Field(min_length=1, description="What clients send as `model`.")
    tiers: list[str] = Field(
        min_length=2, description="Routes, cheapest first; the last one's answer is final."
    )
    checks: list[CheckConfig] = Field(
        min_length=1, description="A tier's answer failing any of them goes to the next tier."
    )
    judge: JudgeConfig | None = Field(
        None, description="Asked after the checks pass: a yes/no question to a route."
    )
    streaming: CascadeStreamingConfig = CascadeStreamingConfig()
    start: CascadeStartConfig = CascadeStartConfig()


def cascade_problems(
    cascades: Sequence[CascadeConfig] | None, route_names: set[str] | None
) -> list[str]:
    """Cascades naming unknown routes or sharing a name with a route or another cascade;
    unknown checks and bad params (each with its YAML path)."""
    if not cascades:
        return []
    from gateway.cascade.checks.registry import check_problems

    problems: list[str] = []
    seen: set[str] = set()
    for i, cascade in enumerate(cascades):
        where = f"cascades.{i}"
        if cascade.name in seen:
            problems.append(f"{where}.name: duplicate name {cascade.name!r}")
        seen.add(cascade.name)
        if route_names is not None:
            if cascade.name in route_names:
                problems.append(f"{where}.name: {cascade.name!r} is also a route's name")
            problems += [
                f"{where}.tiers.{k}: unknown route {tier!r}"
                for k, tier in enumerate(cascade.tiers)
                if tier not in route_names
            ]
            judge = cascade.judge
            if judge is not None and judge.route not in route_names:
                problems.append(f"{where}.judge.route: unknown route {judge.route!r}")
        if len(set(cascade.tiers)) != len(cascade.tiers):
            problems.append(f"{where}.tiers: a route appears twice")
        for k, check in enumerate(cascade.checks):
            found = check_problems(check.check, check.params)
            problems += [f"{where}.checks.{k}{problem}" for problem in found]
    return problems

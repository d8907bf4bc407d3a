"""Assembling profiles from config: each declared policy created once, each profile's
plugins placed by role into a `Pipeline`, and every problem reported with its YAML path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from policies.base import Filter, Picker, Policy, Scorer
from policies.builtins import BUILTINS
from policies.config import PolicyConfig, ProfileConfig
from policies.pickers.max_score_picker import MaxScorePicker
from policies.pipeline import Pipeline, WeightedScorer
from policies.registry import PolicyConfigError, create, params_model


def build_pipelines(
    policies: Sequence[PolicyConfig], profiles: Sequence[ProfileConfig]
) -> dict[str, Pipeline]:
    """One pipeline per profile, keyed by its name, from the declared policies (the
    `policies:` section) and the profiles; raises `PolicyConfigError` listing every problem."""
    declared, broken, problems = _instantiate(policies)
    pipelines: dict[str, Pipeline] = {}
    for i, profile in enumerate(profiles):
        pipeline, more = _assemble(profile, i, declared, broken)
        problems += more
        if pipeline is not None:
            pipelines[profile.name] = pipeline
    if problems:
        raise PolicyConfigError(problems)
    return pipelines


def build_pipeline(
    profile: ProfileConfig, policies: Sequence[PolicyConfig], *, profile_index: int
) -> Pipeline:
    """One profile's pipeline; problems name the YAML path `profiles.<profile_index>`."""
    declared, broken, problems = _instantiate(policies)
    pipeline, more = _assemble(profile, profile_index, declared, broken)
    if problems or more or pipeline is None:
        raise PolicyConfigError(problems + more)
    return pipeline


def pipeline_problems(
    policies: Sequence[PolicyConfig], profiles: Sequence[ProfileConfig]
) -> list[str]:
    """Every problem building these profiles would raise, each with its YAML path."""
    declared, broken, problems = _instantiate(policies)
    for i, profile in enumerate(profiles):
        problems += _assemble(profile, i, declared, broken)[1]
    return problems


def _instantiate(policies: Sequence[PolicyConfig]) -> tuple[dict[str, Policy], set[str], list[str]]:
    """Create each declared policy: (instances by name, names that failed, problems)."""
    declared: dict[str, Policy] = {}
    broken: set[str] = set()
    problems: list[str] = []
    for i, cfg in enumerate(policies):
        try:
            declared[cfg.name] = create(cfg, path=f"policies.{i}")
        except PolicyConfigError as exc:
            broken.add(cfg.name)
            problems += exc.problems
    return declared, broken, problems


def _assemble(
    profile: ProfileConfig, index: int, declared: Mapping[str, Policy], broken: set[str]
) -> tuple[Pipeline | None, list[str]]:
    builder = _ProfileBuilder(f"profiles.{index}.plugins", len(profile.plugins))
    for j, ref in enumerate(profile.plugins):
        policy = declared[ref.ref] if ref.ref in declared else _builtin(ref.ref)
        if policy is not None:
            builder.add(j, policy, ref.weight)
        elif ref.ref not in broken:  # a broken declaration is reported once, under policies
            builder.problems.append(f"{builder.at(j)}.ref: unknown policy {ref.ref!r}")
    if builder.problems:
        return None, builder.problems
    picker = builder.picker or MaxScorePicker(MaxScorePicker.type_name, MaxScorePicker.Params())
    pipeline = Pipeline(profile.name, tuple(builder.filters), tuple(builder.scorers), picker)
    return pipeline, []


def _builtin(type_name: str) -> Policy | None:
    factory = BUILTINS.get(type_name)
    if factory is None:
        return None
    # Named by its canonical type, so an alias and the full name count as the same plugin.
    return factory(factory.type_name, params_model(factory)())


class _ProfileBuilder:
    """Places a profile's plugins by role and collects what is wrong with them."""

    def __init__(self, path: str, count: int) -> None:
        self.path, self.count = path, count
        self.filters: list[Filter] = []
        self.scorers: list[WeightedScorer] = []
        self.picker: Picker | None = None
        self.names: set[str] = set()
        self.problems: list[str] = []

    def at(self, j: int) -> str:
        return f"{self.path}.{j}"

    def add(self, j: int, policy: Policy, weight: float) -> None:
        if policy.name in self.names:
            self.problems.append(f"{self.at(j)}.ref: {policy.name!r} appears twice")
            return
        self.names.add(policy.name)
        if policy.role != "scorer" and weight != 1.0:
            self.problems.append(
                f"{self.at(j)}.weight: only scorers take a weight; "
                f"{policy.name!r} is a {policy.role}"
            )
        if policy.role == "filter":
            self.filters.append(cast(Filter, policy))
        elif policy.role == "scorer":
            self.scorers.append(WeightedScorer(cast(Scorer, policy), weight))
        else:
            self._add_picker(j, cast(Picker, policy))

    def _add_picker(self, j: int, picker: Picker) -> None:
        if self.picker is not None:
            self.problems.append(
                f"{self.at(j)}.ref: a profile has one picker; {picker.name!r} "
                f"comes after {self.picker.name!r}"
            )
        elif j != self.count - 1:
            self.problems.append(
                f"{self.at(j)}.ref: picker {picker.name!r} must be the last plugin"
            )
        if self.picker is None:
            self.picker = picker

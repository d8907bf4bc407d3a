"""Runs a profile's filters, scorers and picker over the candidates of one request."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import TYPE_CHECKING, Any, cast, overload

from policies.answers import Scores, Verdicts
from policies.base import (
    BackendView,
    CandidateReport,
    Decision,
    Filter,
    Picker,
    Policy,
    Ranked,
    Score,
    Scorer,
    Snapshot,
    Verdict,
)
from policies.max_score_picker import MaxScorePicker
from policies.registry import BUILTINS, PolicyConfigError, create, params_model

if TYPE_CHECKING:
    from gateway.config import Config, PolicyConfig, ProfileConfig

_NO_SCORE = Score(0.0, "no score")
_NO_VERDICT = Verdict(False, "no verdict")


class PolicyContractError(RuntimeError):
    """A plugin answered outside its contract, e.g. a picker naming a dropped backend."""


@dataclass(frozen=True, slots=True)
class WeightedScorer:
    scorer: Scorer
    weight: float


@dataclass(frozen=True, slots=True)
class Pipeline:
    """One profile's plugins; `decide` is pure apart from reading the clock."""

    profile: str
    filters: tuple[Filter, ...]
    scorers: tuple[WeightedScorer, ...]
    picker: Picker

    @classmethod
    def build(
        cls, profile: ProfileConfig, policies: Sequence[PolicyConfig], *, profile_index: int
    ) -> Pipeline:
        declared, broken, problems = _instantiate(policies)
        pipeline, more = _assemble(profile, profile_index, declared, broken)
        if problems or more or pipeline is None:
            raise PolicyConfigError(problems + more)
        return pipeline

    def decide(
        self, snapshot: Snapshot, candidates: Sequence[BackendView], decision_id: str
    ) -> Decision:
        started = time.perf_counter_ns()
        timings: dict[str, float] = {}
        survivors, filtered = self._filter(snapshot, candidates, timings)
        totals, scored = self._score(snapshot, survivors, timings)
        if survivors:
            order, reason = self._pick(snapshot, survivors, totals, timings)
        elif candidates:
            # Filters stop once nothing survives, so the last one run emptied the set.
            order, reason = (), f"no candidates left after {filtered[-1][0]}"
        else:
            order, reason = (), "no candidates"
        return Decision(
            id=decision_id,
            route=snapshot.request.route,
            model=snapshot.request.model,
            order=order,
            candidates=CandidateReports(candidates, filtered, scored, totals),
            picker=self.picker.name,
            picker_reason=reason,
            timings_us=timings,
            total_us=(time.perf_counter_ns() - started) / 1000,
            created_at=snapshot.now_s,
        )

    def _filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView], timings: dict[str, float]
    ) -> tuple[Sequence[BackendView], list[tuple[str, Mapping[str, Verdict]]]]:
        """The survivors, and each filter that ran with its answer, in order."""
        survivors = candidates
        filtered: list[tuple[str, Mapping[str, Verdict]]] = []
        for flt in self.filters:
            if not survivors:
                break
            t0 = time.perf_counter_ns()
            answer = flt.filter(snapshot, survivors)
            timings[flt.name] = (time.perf_counter_ns() - t0) / 1000
            filtered.append((flt.name, answer))
            if isinstance(answer, Verdicts) and answer.candidates is survivors:
                survivors = list(compress(survivors, answer.keep))
            else:
                get = answer.get
                survivors = [b for b in survivors if get(b.name, _NO_VERDICT).keep]
        return survivors, filtered

    def _score(
        self, snapshot: Snapshot, survivors: Sequence[BackendView], timings: dict[str, float]
    ) -> tuple[dict[str, float], list[tuple[str, Mapping[str, Score]]]]:
        """Each survivor's weighted mean score, and each scorer with its answer, in order."""
        names = [b.name for b in survivors]
        sums = [0.0] * len(names)
        scored: list[tuple[str, Mapping[str, Score]]] = []
        weight_sum = 0.0
        for ws in self.scorers if survivors else ():
            t0 = time.perf_counter_ns()
            answer = ws.scorer.score(snapshot, survivors)
            timings[ws.scorer.name] = (time.perf_counter_ns() - t0) / 1000
            scored.append((ws.scorer.name, answer))
            weight = ws.weight
            weight_sum += weight
            if isinstance(answer, Scores) and answer.candidates is survivors:
                values: Sequence[float | None] = answer.value
            else:
                get = answer.get
                values = [None if (s := get(name)) is None else s.value for name in names]
            for i, value in enumerate(values):
                if value is None:
                    continue
                sums[i] += weight * _bounded(value)
        if weight_sum > 0:
            return {name: s / weight_sum for name, s in zip(names, sums, strict=True)}, scored
        return dict.fromkeys(names, 0.0), scored

    def _pick(
        self,
        snapshot: Snapshot,
        survivors: Sequence[BackendView],
        totals: Mapping[str, float],
        timings: dict[str, float],
    ) -> tuple[tuple[str, ...], str]:
        ranked = [Ranked(b, totals[b.name]) for b in survivors]
        t0 = time.perf_counter_ns()
        pick = self.picker.pick(snapshot, ranked)
        timings[self.picker.name] = (time.perf_counter_ns() - t0) / 1000
        if not totals.keys() >= set(pick.order) or len(set(pick.order)) != len(pick.order):
            raise PolicyContractError(
                f"picker {self.picker.name!r} returned {pick.order!r}; "
                f"expected distinct names among {tuple(totals)!r}"
            )
        return tuple(pick.order), pick.reason


class CandidateReports(Sequence[CandidateReport]):
    """A decision's per-candidate reports, built from the plugins' answers when first read.

    Routing only needs the order; the reports (a verdict and a score per plugin and
    candidate) are for the decisions API and the telemetry thread, so building them is
    left to whoever reads them first (in the gateway, the telemetry thread). Two threads
    reading at once may both build them, from the same answers, so to equal tuples.
    """

    __slots__ = ("_answers", "_built")

    def __init__(
        self,
        candidates: Sequence[BackendView],
        filtered: Sequence[tuple[str, Mapping[str, Verdict]]],
        scored: Sequence[tuple[str, Mapping[str, Score]]],
        totals: Mapping[str, float],
    ) -> None:
        self._answers: tuple[Any, ...] | None = (candidates, filtered, scored, totals)
        self._built: tuple[CandidateReport, ...] | None = None

    def reports(self) -> tuple[CandidateReport, ...]:
        built = self._built
        if built is not None:
            return built
        answers = self._answers
        if answers is None:  # another thread built them since the first read
            built = self._built
            assert built is not None  # set before the answers were let go
            return built
        built = self._built = tuple(_report(b.name, *answers[1:]) for b in answers[0])
        self._answers = None
        return built

    @overload
    def __getitem__(self, index: int) -> CandidateReport: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[CandidateReport, ...]: ...

    def __getitem__(self, index: int | slice) -> CandidateReport | tuple[CandidateReport, ...]:
        return self.reports()[index]

    def __len__(self) -> int:
        return len(self.reports())

    def __iter__(self) -> Iterator[CandidateReport]:
        return iter(self.reports())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CandidateReports):
            return self.reports() == other.reports()
        if isinstance(other, tuple):
            return self.reports() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.reports())

    def __repr__(self) -> str:
        return repr(self.reports())


def build_pipelines(config: Config) -> dict[str, Pipeline]:
    """One pipeline per profile; raises `PolicyConfigError` listing every problem."""
    declared, broken, problems = _instantiate(config.policies)
    pipelines: dict[str, Pipeline] = {}
    for i, profile in enumerate(config.profiles):
        pipeline, more = _assemble(profile, i, declared, broken)
        problems += more
        if pipeline is not None:
            pipelines[profile.name] = pipeline
    if problems:
        raise PolicyConfigError(problems)
    return pipelines


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
    canonical: str = getattr(factory, "type_name", type_name)
    return factory(canonical, params_model(factory)())


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


def _bounded(value: float) -> float:
    """A score forced into [0, 1]; NaN (which fails both bounds) counts as 0."""
    if 0.0 <= value <= 1.0:
        return value
    return 1.0 if value > 1.0 else 0.0


def _clamp(score: Score | None) -> Score:
    """The score as reported: `_bounded`, saying so in the reason when it was not in range."""
    if score is None:
        return _NO_SCORE
    value = score.value
    if 0.0 <= value <= 1.0:
        return score
    if math.isnan(value):
        return Score(0.0, f"no score (got NaN: {score.reason})" if score.reason else "no score")
    return Score(_bounded(value), f"{score.reason} (clamped from {value:g})")


def _report(
    name: str,
    filtered: Sequence[tuple[str, Mapping[str, Verdict]]],
    scored: Sequence[tuple[str, Mapping[str, Score]]],
    totals: Mapping[str, float],
) -> CandidateReport:
    # Each filter ran on the survivors of the ones before, so a candidate has a verdict
    # from every filter up to the one that dropped it.
    verdicts: dict[str, Verdict] = {}
    dropped_by = None
    for plugin, answer in filtered:
        verdicts[plugin] = verdict = answer.get(name, _NO_VERDICT)
        if not verdict.keep:
            dropped_by = plugin
            break
    scores = {}
    if dropped_by is None:
        scores = {plugin: _clamp(answer.get(name)) for plugin, answer in scored}
    return CandidateReport(
        backend=name,
        total=totals.get(name, 0.0),
        scores=scores,
        dropped_by=dropped_by,
        verdicts=verdicts,
    )

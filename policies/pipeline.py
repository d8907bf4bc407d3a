"""Runs a profile's filters, scorers and picker over the candidates of one request."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any, NamedTuple, overload

from policies.answers import Scores, Verdicts
from policies.base import Filter, Picker, Score, Scorer, Verdict
from policies.decision import CandidateReport, Decision, Ranked
from policies.snapshot import BackendView, Snapshot

_NO_SCORE = Score(0.0, "no score")
_NO_VERDICT = Verdict(False, "no verdict")


class PolicyContractError(RuntimeError):
    """A plugin answered outside its contract, e.g. a picker naming a dropped backend."""


@dataclass(frozen=True, slots=True)
class WeightedScorer:
    """A scorer and its weight in the profile's weighted mean."""

    scorer: Scorer
    weight: float


@dataclass(frozen=True, slots=True)
class Pipeline:
    """One profile's plugins (assembled by `policies.profiles`); `decide` is pure apart
    from reading the clock."""

    profile: str
    filters: tuple[Filter, ...]
    scorers: tuple[WeightedScorer, ...]
    picker: Picker

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
                if not all(answer.keep):  # all kept: the same list, read as it is
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

    def answers(self) -> AnswerTable | None:
        """The plugins' answers, to read without building reports; None once the reports
        are built (the answers are let go then: read the reports)."""
        answers = self._answers
        return None if answers is None else AnswerTable(*answers)

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


def _bounded(value: float) -> float:
    """A score forced into [0, 1]; NaN (which fails both bounds) counts as 0."""
    if 0.0 <= value <= 1.0:
        return value
    return 1.0 if value > 1.0 else 0.0


def _clamp(score: Score | None) -> Score:
    """The score as reported: `_bounded`, saying so in the reason when it was not in range."""
    if score is None:
        return _NO_SCORE
    if 0.0 <= score.value <= 1.0:
        return score  # its reason still unwritten
    return Score(*_clamped(score.value, score.reason))


def _clamped(value: float, reason: str) -> tuple[float, str]:
    """A score's value and reason as reported (see `_clamp`)."""
    if 0.0 <= value <= 1.0:
        return value, reason
    if math.isnan(value):
        return 0.0, f"no score (got NaN: {reason})" if reason else "no score"
    return _bounded(value), f"{reason} (clamped from {value:g})"


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


class Explained(NamedTuple):
    """A candidate's report as plain values, every reason written out."""

    backend: str
    total: float
    verdicts: list[tuple[str, bool, str]]
    """(filter, keep, reason), in the order the filters ran, up to the one that dropped it."""
    scores: list[tuple[str, float, str]]
    """(scorer, clamped value, reason); none when it was dropped."""
    dropped_by: str | None
    drop_reason: str | None


class Standing(NamedTuple):
    """A candidate's outcome as numbers, no reason written: what telemetry compares."""

    backend: str
    total: float
    dropped_by: str | None
    scores: dict[str, float]
    """Each scorer's clamped value; empty when it was dropped."""


class AnswerTable:
    """The plugins' answers about a decision's candidates, read as `CandidateReports`
    would report them but without making a report, verdict, score or reason function:
    the telemetry thread explains every decision, and the objects cost more than the
    values. Read a plugin at a time, as the pipeline ran them: column answers by position
    (their reasons written in one go), any other mapping by name."""

    __slots__ = ("_aligned", "candidates", "filtered", "names", "scored", "totals")

    def __init__(
        self,
        candidates: Sequence[BackendView],
        filtered: Sequence[tuple[str, Mapping[str, Verdict]]],
        scored: Sequence[tuple[str, Mapping[str, Score]]],
        totals: Mapping[str, float],
    ) -> None:
        self.candidates = candidates
        self.filtered = filtered
        self.scored = scored
        self.totals = totals
        self.names = names = [b.name for b in candidates]
        # With a name repeated, a column answer's lookup by name finds its last place, so
        # candidate i's position is i only when names are distinct.
        self._aligned = len(names) < 2 or len(set(names)) == len(names)

    def explained(self) -> list[Explained]:
        """Every candidate's report, as `CandidateReports` would have it."""
        out = []
        totals = self.totals
        for i, name in enumerate(self.names):
            verdicts = []
            dropped_by = drop_reason = None
            for plugin, verdicts_of in self.filtered:
                keep, reason = self._verdict(verdicts_of, i, name)
                verdicts.append((plugin, keep, reason))
                if not keep:
                    dropped_by, drop_reason = plugin, reason if plugin else None
                    break
            scores = []
            if dropped_by is None:
                for plugin, scores_of in self.scored:
                    value, reason = self._score(scores_of, i, name)
                    scores.append((plugin, value, reason))
            out.append(
                Explained(name, totals.get(name, 0.0), verdicts, scores, dropped_by, drop_reason)
            )
        return out

    def standings(self) -> list[Standing]:
        """Every candidate's total, dropping filter and clamped scores, no reason written."""
        out = []
        totals = self.totals
        for i, name in enumerate(self.names):
            dropped_by = None
            for plugin, verdicts_of in self.filtered:
                if not self._keep(verdicts_of, i, name):
                    dropped_by = plugin
                    break
            scores = {}
            if dropped_by is None:
                for plugin, scores_of in self.scored:
                    scores[plugin] = self._value(scores_of, i, name)
            out.append(Standing(name, totals.get(name, 0.0), dropped_by, scores))
        return out

    def score_reason(self, i: int, plugin: str) -> str:
        """The reason `plugin` gave for candidate `i` (a survivor), as reported."""
        answer = next(answer for scorer, answer in reversed(self.scored) if scorer == plugin)
        return self._score(answer, i, self.names[i])[1]

    def drop_reason(self, i: int) -> str | None:
        """Why candidate `i` was dropped, as reported (None: it was not)."""
        for plugin, answer in self.filtered:
            keep, reason = self._verdict(answer, i, self.names[i])
            if not keep:
                return reason if plugin else None
        return None

    # Exact types, not isinstance: a subclass may answer differently by name, and an
    # isinstance check of a plain dict against an ABC subclass costs more than the read.

    def _verdict(self, answer: Mapping[str, Verdict], i: int, name: str) -> tuple[bool, str]:
        if type(answer) is Verdicts:
            at = i if self._aligned and answer.candidates is self.candidates else None
            if at is not None or (at := answer.position(name)) is not None:
                return answer.keep[at], answer.reason_at(at)
            return _NO_VERDICT.keep, _NO_VERDICT.reason
        verdict = answer.get(name, _NO_VERDICT)
        return verdict.keep, verdict.reason

    def _keep(self, answer: Mapping[str, Verdict], i: int, name: str) -> bool:
        if type(answer) is Verdicts:
            at = i if self._aligned and answer.candidates is self.candidates else None
            if at is not None or (at := answer.position(name)) is not None:
                return answer.keep[at]
            return _NO_VERDICT.keep
        return answer.get(name, _NO_VERDICT).keep

    def _score(self, answer: Mapping[str, Score], i: int, name: str) -> tuple[float, str]:
        if type(answer) is Scores:
            at = i if self._aligned and answer.candidates is self.candidates else None
            if at is not None or (at := answer.position(name)) is not None:
                return _clamped(answer.value[at], answer.reason_at(at))
            return _NO_SCORE.value, _NO_SCORE.reason
        score = _clamp(answer.get(name))
        return score.value, score.reason

    def _value(self, answer: Mapping[str, Score], i: int, name: str) -> float:
        if type(answer) is Scores:
            at = i if self._aligned and answer.candidates is self.candidates else None
            if at is not None or (at := answer.position(name)) is not None:
                return _bounded(answer.value[at])
            return _NO_SCORE.value
        score = answer.get(name)
        return _NO_SCORE.value if score is None else _bounded(score.value)

"""Drops backends predicted to miss the request's TTFT or TPOT target."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import ClassVar, Literal, NamedTuple

from policies.answers import Verdicts
from policies.base import Role, Verdict
from policies.predict import PredictionParams, predicted_tpots_ms, predicted_ttfts_ms
from policies.register import register_policy
from policies.snapshot import BackendView, RequestInfo, Snapshot

Metric = Literal["TTFT", "TPOT"]
_NO_SLA = Verdict(True, "no SLA")


class _Target(NamedTuple):
    metric: Metric
    ms: float
    shown: str
    """`500 ms`, formatted once per request rather than once per candidate."""


@register_policy
class SlaFilter:
    """Compares `request.ttft_slo_ms` / `tpot_slo_ms` with the predictions of
    `policies.predict`; a request without targets keeps every candidate.

    When every candidate would miss, they are all kept (so the picker still chooses the
    least bad one) unless `strict` is set, in which case the request fails fast instead.
    """

    role: ClassVar[Role] = "filter"
    type_name: ClassVar[str] = "sla-filter"

    class Params(PredictionParams):
        strict: bool = False
        """Drop every candidate when all are predicted to miss, instead of keeping all."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        targets = _targets(snapshot.request)
        if not targets:
            return {b.name: _NO_SLA for b in candidates}
        columns = [self._predicted(snapshot, candidates, t.metric) for t in targets]
        rows = list(zip(*columns, strict=True))  # per candidate, a prediction per target
        if len(targets) == 1:  # the usual case
            limit = targets[0].ms
            keeps = [not predicted > limit for predicted in columns[0]]  # NaN: not a miss
        else:
            keeps = [_meets(targets, row) for row in rows]
        if self.params.strict or any(keeps):
            return Verdicts(candidates, keeps, partial(_reason, targets), rows)
        missed = {t.metric for row in rows for t, p in zip(targets, row, strict=True) if p > t.ms}
        summary = " or ".join(f"{t.metric} {t.shown}" for t in targets if t.metric in missed)
        keep_all = f"all candidates predicted to miss {summary}; keeping all"
        return Verdicts(candidates, [True] * len(rows), partial(_kept, keep_all, targets), rows)

    def _predicted(
        self, snapshot: Snapshot, candidates: Sequence[BackendView], metric: Metric
    ) -> list[float]:
        """The metric's prediction for every candidate, in order."""
        p = self.params
        if metric == "TTFT":
            return predicted_ttfts_ms(snapshot, candidates, chunk_tokens=p.prefill_chunk_tokens)
        return predicted_tpots_ms(candidates, growth_per_decode=p.tpot_growth_per_decode)


def _meets(targets: tuple[_Target, ...], predicted: tuple[float, ...]) -> bool:
    return not any(p > t.ms for t, p in zip(targets, predicted, strict=True))


def _reason(targets: tuple[_Target, ...], predicted: tuple[float, ...]) -> str:
    phrases = []
    for t, p in zip(targets, predicted, strict=True):
        sign = "≤" if p <= t.ms else ">"
        phrases.append(f"predicted {t.metric} {_ms(p)} {sign} target {t.shown}")
    return "; ".join(phrases)


def _kept(summary: str, targets: tuple[_Target, ...], predicted: tuple[float, ...]) -> str:
    return f"{summary} ({_reason(targets, predicted)})"


def _targets(request: RequestInfo) -> tuple[_Target, ...]:
    targets = []
    if request.ttft_slo_ms is not None:
        targets.append(_Target("TTFT", request.ttft_slo_ms, _ms(request.ttft_slo_ms)))
    if request.tpot_slo_ms is not None:
        targets.append(_Target("TPOT", request.tpot_slo_ms, _ms(request.tpot_slo_ms)))
    return tuple(targets)


def _ms(value: float) -> str:
    """`1,240 ms` and `50 ms`, but `20.6 ms`: tenths only where they matter."""
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f} ms"
    return f"{value:.1f} ms"

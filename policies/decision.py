"""What a decision produces: the ranked survivors a picker orders, and the `Decision` with
every plugin's report per candidate, kept for the decisions API, logs and telemetry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from policies.base import Score, Verdict
from policies.snapshot import BackendView


@dataclass(frozen=True, slots=True, eq=False)
class Ranked:
    """A surviving candidate with its combined weighted score."""

    backend: BackendView
    total: float

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ranked):
            return NotImplemented
        return (self.backend, self.total) == (other.backend, other.total)

    def __hash__(self) -> int:
        return hash((self.backend, self.total))

    def __repr__(self) -> str:
        return f"Ranked(backend={self.backend.name!r}, total={self.total!r})"


@dataclass(frozen=True, slots=True)
class CandidateReport:
    """Everything the pipeline learned about one candidate."""

    backend: str
    total: float
    scores: Mapping[str, Score] = field(default_factory=dict)
    dropped_by: str | None = None
    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    """Each filter's verdict, keyed by filter name, up to and including the one that
    dropped it; keeps reasons such as healthy-filter's panic mode visible."""

    @property
    def drop_reason(self) -> str | None:
        verdict = self.verdicts.get(self.dropped_by) if self.dropped_by else None
        return verdict.reason if verdict is not None else None


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of one routing decision, with every reason kept."""

    id: str
    route: str
    model: str
    order: tuple[str, ...]
    candidates: Sequence[CandidateReport]
    """Per candidate, in the order given: the reports of every plugin (built on first read)."""
    picker: str
    picker_reason: str
    timings_us: Mapping[str, float]
    total_us: float
    created_at: float

    @property
    def chosen(self) -> str | None:
        return self.order[0] if self.order else None

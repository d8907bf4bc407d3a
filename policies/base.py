"""The routing contracts: what a policy reads (a snapshot) and what it returns.

Filters keep or drop candidates, scorers give each candidate a value in [0, 1], a picker
orders the survivors. Every answer carries a short human-readable reason. Policies are
pure: they read the immutable snapshot and return values; recording, counting and
ejecting happen outside them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

Role = Literal["filter", "scorer", "picker"]
Endpoint = Literal["chat.completions", "completions", "embeddings"]


@dataclass(frozen=True, slots=True)
class BackendView:
    """One backend as the policies see it at decision time."""

    name: str
    kind: str
    models: frozenset[str]
    healthy: bool
    in_flight: int
    max_concurrency: int
    health_reason: str = ""
    queued_prefill_tokens: int = 0
    """Uncached prompt tokens dispatched here and not yet prefilled (first byte not seen)."""
    decoding: int = 0
    """Streams past their first token, i.e. sequences in the decode batch."""
    prefill_tokens_per_s: float = 10_000.0
    """Estimated uncached prefill speed (a configured prior, refined from traffic)."""
    tpot_ms: float = 20.0
    """Estimated time per output token under the current load."""
    network_ms: float = 0.0
    """Estimated fixed overhead of a request to this backend (connection, queueing)."""
    engine_running: int | None = None
    """Requests the engine itself reports running (its scraped `/metrics`), every client's
    included; None when the backend is not scraped or the last reading is stale."""
    engine_waiting: int | None = None
    """Requests the engine itself reports queued, not yet admitted; None as above."""
    engine_kv_usage: float | None = None
    """Fraction (0..1) of the KV cache the engine reports in use; None as above."""


QualityState = Literal["healthy", "probation", "ejected", "unknown"]


@dataclass(frozen=True, slots=True)
class QualityView:
    """A backend's live quality for the request's model (gateway/quality/), as policies see it."""

    fidelity: float = 1.0
    """In [0, 1]: is this the right model, served correctly (errors, tool calls, loops,
    truncation, canary drift). The worst signal sets it."""
    sla: float = 1.0
    """In [0, 1]: does it meet the TTFT / TPOT it promised, lately."""
    state: QualityState = "unknown"
    """healthy; ejected (kept off traffic until `ejected_for_s` passes); probation (back
    from an ejection, not yet above the restore threshold); unknown (no evidence yet)."""
    reason: str = "no evidence yet"
    """The signal that hurt most, in words."""
    ejected_for_s: float = 0.0


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What the policies may know about the request being routed."""

    route: str
    model: str
    endpoint: Endpoint
    stream: bool
    session_key: str | None
    seq: int
    """Per-route request counter; lets rotation policies stay pure."""
    rng_seed: int
    """Per-request seed; randomised policies derive their randomness from it."""
    prompt_tokens: int = 0
    """Prompt tokens (tiktoken count, or an estimate), tools included."""
    max_tokens: int | None = None
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Immutable view of the fleet for one decision."""

    request: RequestInfo
    backends: Mapping[str, BackendView]
    now_s: float
    cached_tokens: Mapping[str, int] = field(default_factory=dict)
    """Predicted prompt tokens already in each backend's KV cache (from the prefix index)."""
    quality: Mapping[str, QualityView] = field(default_factory=dict)
    """Each backend's live quality for the request's model; absent: no quality tracking."""
    derived: dict[tuple[object, ...], dict[str, float]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """Numbers computed from this snapshot alone, shared by the policies of one decision:
    per key (e.g. `("ttft", chunk_tokens)`), a number per backend name (e.g. predicted TTFT,
    read by both sla-filter and kv-cost-scorer)."""


Reason = str | Callable[[], str]
"""A reason, or a function that writes one. Policies that explain every candidate of every
request pass a function (e.g. `functools.partial(describe, b, numbers)`): the text is only
formatted when someone reads it (the API, the log writer), off the decision's hot path."""


def _text(reason: Reason) -> str:
    return reason if isinstance(reason, str) else reason()


class Verdict:
    """A filter's answer about one candidate: keep it or drop it, and why.

    Verdict and Score are plain slotted classes, not frozen dataclasses: a 16-backend
    decision makes over a hundred of them, and a frozen dataclass's `__init__` (one
    `object.__setattr__` per field) costs four times as much. Their attributes are
    `Final`, so mypy keeps them read-only. Two are equal when their values and reason
    texts are.
    """

    __slots__ = ("keep", "why")

    def __init__(self, keep: bool, why: Reason) -> None:
        self.keep: Final = keep
        self.why: Final = why

    @property
    def reason(self) -> str:
        return _text(self.why)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Verdict):
            return NotImplemented
        return (self.keep, self.reason) == (other.keep, other.reason)

    def __hash__(self) -> int:
        return hash((self.keep, self.reason))

    def __repr__(self) -> str:
        return f"Verdict(keep={self.keep!r}, reason={self.reason!r})"


class Score:
    """A scorer's answer about one candidate: a value in [0, 1], higher is better, and why."""

    __slots__ = ("value", "why")

    def __init__(self, value: float, why: Reason) -> None:
        self.value: Final = value
        self.why: Final = why

    @property
    def reason(self) -> str:
        return _text(self.why)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Score):
            return NotImplemented
        return (self.value, self.reason) == (other.value, other.reason)

    def __hash__(self) -> int:
        return hash((self.value, self.reason))

    def __repr__(self) -> str:
        return f"Score(value={self.value!r}, reason={self.reason!r})"


class Ranked:
    """A surviving candidate with its combined weighted score (a plain class, as Score)."""

    __slots__ = ("backend", "total")

    def __init__(self, backend: BackendView, total: float) -> None:
        self.backend: Final = backend
        self.total: Final = total

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ranked):
            return NotImplemented
        return (self.backend, self.total) == (other.backend, other.total)

    def __hash__(self) -> int:
        return hash((self.backend, self.total))

    def __repr__(self) -> str:
        return f"Ranked(backend={self.backend.name!r}, total={self.total!r})"


@dataclass(frozen=True, slots=True)
class Pick:
    """A picker's answer: the order in which to try backends (first = chosen)."""

    order: tuple[str, ...]
    reason: str


class PolicyParams(BaseModel):
    """Base for every policy's typed parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@runtime_checkable
class Filter(Protocol):
    role: ClassVar[Role]
    name: str

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        """Return a verdict for every candidate, keyed by backend name."""
        ...


@runtime_checkable
class Scorer(Protocol):
    role: ClassVar[Role]
    name: str

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        """Return a score in [0, 1] for every candidate, keyed by backend name."""
        ...


@runtime_checkable
class Picker(Protocol):
    role: ClassVar[Role]
    name: str

    def pick(self, snapshot: Snapshot, ranked: Sequence[Ranked]) -> Pick:
        """Order the ranked survivors; the dispatcher tries them in that order."""
        ...


Policy = Filter | Scorer | Picker


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

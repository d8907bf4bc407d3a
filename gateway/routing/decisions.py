"""A bounded in-memory ring of recent routing decisions and what became of them: each
request's decision and placement, the fallback routes it moved on to, and every attempt."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import orjson

from gateway.prefix.work import PromptWork
from policies.decision import Decision
from policies.describe import describe_decision

if TYPE_CHECKING:
    from gateway.config.placement import Placement


@dataclass(slots=True)
class Attempt:
    backend: str
    outcome: str
    """"ok", or the error code that made the dispatcher move on."""
    duration_ms: float
    route: str = ""
    """The route whose decision named the backend (a fallback's, after the first route)."""
    model: str = ""
    """The upstream model id the attempt asked for."""


@dataclass(slots=True)
class FallbackLeg:
    """A fallback route the request moved on to: its own decision, prompt work and
    placement."""

    decision: Decision
    work: PromptWork
    placement: Placement | None = None


@dataclass(frozen=True, slots=True)
class HeldNote:
    """What flow control did with a request before its dispatch."""

    priority: str
    tenant: str
    outcome: str
    """`immediate` (a candidate had room), `queued` (held, then released), `fallback`
    (moved to a fallback route), or why it was refused (`deadline_unmeetable`,
    `queue_full`, `queue_timeout`, `request_shed`)."""
    waited_ms: float
    reason: str
    """Why it went when it did, or why it did not."""

    def describe(self) -> dict[str, Any]:
        return {
            "priority": self.priority,
            "tenant": self.tenant,
            "outcome": self.outcome,
            "waited_ms": round(self.waited_ms, 3),
            "reason": self.reason,
        }


@dataclass(slots=True)
class DecisionRecord:
    decision: Decision
    """The decision on the route the client named; its id is the record's."""
    work: PromptWork = field(default_factory=PromptWork)
    attempts: list[Attempt] = field(default_factory=list)
    status: int | None = None
    served_by: str | None = None
    fallbacks: list[FallbackLeg] = field(default_factory=list)
    """The fallback routes decided, in the order they were reached."""
    left: list[str] = field(default_factory=list)
    """Why the request left each route, in order (the first route's reason first)."""
    placement: Placement | None = None
    """The tags the request required on the first route, from which sources, and the
    members they excluded (None: not recorded, as in records made before routing)."""
    cool_down_wait_ms: float = 0.0
    """Time spent waiting for a route whose every backend was cooling down."""
    held: HeldNote | None = None
    """What flow control did (None: it did not look at the request)."""
    _rendered: bytes | None = None

    def redecided(self, decision: Decision, work: PromptWork, placement: Placement) -> None:
        """The first route was decided again (flow control released the request): the
        new decision keeps the record's id, which the client has been told."""
        self.decision = replace(decision, id=self.decision.id)
        self.work, self.placement = work, placement

    @property
    def served_attempt(self) -> Attempt | None:
        """The attempt whose response reached the client."""
        if self.served_by is None or not self.attempts:
            return None
        last = self.attempts[-1]
        return last if last.outcome == "ok" else None

    @property
    def served_work(self) -> PromptWork:
        """The prompt work of the route that served (the first route's when none did)."""
        served = self.served_attempt
        route = served.route if served is not None else self.decision.route
        return next((leg.work for leg in self.fallbacks if leg.decision.route == route), self.work)

    def rendered(self) -> bytes:
        """The JSON of `to_dict()`, rendered once (on the telemetry thread)."""
        if self._rendered is None:
            self._rendered = orjson.dumps(self._describe())
        return self._rendered

    def compact(self) -> None:
        """Once finished and recorded, keep the explanation as JSON bytes only.

        A decision's candidate reports, scores and reasons are ~360 objects the cyclic
        collector tracks; a full ring of them (4,096) made every full collection pause
        the gateway for ~0.4 s. Bytes are not tracked. The prompt's block ids go too.
        """
        self.rendered()
        self.decision = _without_reports(self.decision)
        self.work = PromptWork(cached_tokens=self.work.cached_tokens)
        for leg in self.fallbacks:
            leg.decision = _without_reports(leg.decision)
            leg.work = PromptWork(cached_tokens=leg.work.cached_tokens)

    def to_dict(self) -> dict[str, Any]:
        # Described first, checked after: compact() (telemetry thread) sets the bytes before
        # it replaces anything, so a description that raced it is replaced by the bytes.
        described = self._describe()
        if self._rendered is not None:
            loaded: dict[str, Any] = orjson.loads(self._rendered)
            return loaded
        return described

    def _describe(self) -> dict[str, Any]:
        out = _described(self.decision, self.work, self.placement)
        out["attempts"] = [
            {
                "backend": a.backend,
                "outcome": a.outcome,
                "duration_ms": round(a.duration_ms, 3),
                "route": a.route,
                "model": a.model,
            }
            for a in self.attempts
        ]
        out["cool_down_wait_ms"] = round(self.cool_down_wait_ms, 3)
        out["held"] = self.held.describe() if self.held is not None else None
        out["status"] = self.status
        out["served_by"] = self.served_by
        served = self.served_attempt
        out["served_route"] = served.route if served is not None else None
        out["served_model"] = served.model if served is not None else None
        decisions = [self.decision, *(leg.decision for leg in self.fallbacks)]
        out["route_chain"] = route_chain(decisions, self.left)
        out["fallbacks"] = [
            _described(leg.decision, leg.work, leg.placement) for leg in self.fallbacks
        ]
        return out


def _without_reports(decision: Decision) -> Decision:
    """The decision without its candidates' reports and plugin timings. Made directly:
    `dataclasses.replace` cost a quarter of a compaction."""
    return Decision(
        id=decision.id,
        route=decision.route,
        model=decision.model,
        order=decision.order,
        candidates=(),
        picker=decision.picker,
        picker_reason=decision.picker_reason,
        timings_us={},
        total_us=decision.total_us,
        created_at=decision.created_at,
    )


def route_chain(decisions: list[Decision], left: list[str]) -> list[dict[str, Any]]:
    """Each route reached, in order: its decision's id and why the request left it (None
    for the last one: it served, or the request ended there)."""
    return [
        {"route": d.route, "decision": d.id, "left": left[i] if i < len(left) else None}
        for i, d in enumerate(decisions)
    ]


def _described(decision: Decision, work: PromptWork, placement: Placement | None) -> dict[str, Any]:
    described = describe_decision(decision)
    described["prompt_tokens"] = work.prompt_tokens
    described["predicted_cached_tokens"] = dict(work.cached_tokens)
    if work.breakpoints:
        described["cache_breakpoints"] = {b: p.describe() for b, p in work.breakpoints.items()}
    described["placement"] = placement.describe() if placement is not None else None
    return described


class DecisionRing:
    """Keeps the last `capacity` decisions; older ones fall off."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._records: OrderedDict[str, DecisionRecord] = OrderedDict()

    def add(self, record: DecisionRecord) -> None:
        self._records[record.decision.id] = record
        if len(self._records) > self._capacity:
            self._records.popitem(last=False)

    def get(self, decision_id: str) -> DecisionRecord | None:
        return self._records.get(decision_id)

    def __len__(self) -> int:
        return len(self._records)

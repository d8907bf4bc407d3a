"""A bounded in-memory ring of recent routing decisions and what became of them."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from gateway.prefix.work import PromptWork
from policies import describe_decision
from policies.decision import Decision


@dataclass(slots=True)
class Attempt:
    backend: str
    outcome: str
    """"ok", or the error code that made the dispatcher move on."""
    duration_ms: float


@dataclass(slots=True)
class DecisionRecord:
    decision: Decision
    work: PromptWork = field(default_factory=PromptWork)
    attempts: list[Attempt] = field(default_factory=list)
    status: int | None = None
    served_by: str | None = None
    _rendered: bytes | None = None

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
        self.decision = replace(self.decision, candidates=(), timings_us={})
        self.work = PromptWork(cached_tokens=self.work.cached_tokens)

    def to_dict(self) -> dict[str, Any]:
        # Described first, checked after: compact() (telemetry thread) sets the bytes before
        # it replaces anything, so a description that raced it is replaced by the bytes.
        described = self._describe()
        if self._rendered is not None:
            loaded: dict[str, Any] = orjson.loads(self._rendered)
            return loaded
        return described

    def _describe(self) -> dict[str, Any]:
        out = describe_decision(self.decision)
        out["attempts"] = [
            {"backend": a.backend, "outcome": a.outcome, "duration_ms": round(a.duration_ms, 3)}
            for a in self.attempts
        ]
        out["prompt_tokens"] = self.work.prompt_tokens
        out["predicted_cached_tokens"] = dict(self.work.cached_tokens)
        out["status"] = self.status
        out["served_by"] = self.served_by
        return out


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

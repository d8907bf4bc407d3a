"""Request records as rows for the store, built on the telemetry thread.

A refused request the refusals' record bucket let through (`Refusal.sampled`) is a row of
the same table: no decision (`decision_id` empty), no backend, no tokens; its reason under
`reasons["refused"]`, where a refusal after the decision (flow control's) keeps its own.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from gateway.telemetry.refusals import Refusal

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gateway.telemetry.record import RequestRecord
    from gateway.telemetry.refusals import RefusalItem
    from policies.prices import PriceLookup

_PROMPT_FIELDS = ("messages", "prompt", "input", "tools")


class RowWriter(Protocol):
    def put(self, table: Any, row: dict[str, Any]) -> bool: ...


class StoreSink:
    name = "store"

    def __init__(
        self,
        writer: RowWriter,
        weights: Mapping[str, Mapping[str, float]],
        prices: PriceLookup,
        *,
        keep_prompts: bool = False,
        max_prompt_bytes: int = 64 * 1024,
    ) -> None:
        self._writer = writer
        self._weights = weights
        self._prices = prices
        self._keep_prompts = keep_prompts
        self._max_prompt_bytes = max_prompt_bytes

    def consume(self, record: RequestRecord) -> None:
        self._writer.put("requests", self.row(record))

    def refused(self, item: RefusalItem) -> None:
        if isinstance(item, Refusal) and item.sampled:
            self._writer.put("requests", refused_row(item))

    def row(self, record: RequestRecord) -> dict[str, Any]:
        decision = record.decision.decision
        prompt, cached, completion = record.tokens()
        tpot = record.tpot_s
        held = record.decision.held
        return {
            "created_at": datetime.fromtimestamp(record.at, UTC),
            "decision_id": decision.id,
            "key_id": record.key_id,
            "team": record.team,
            "route": record.route,
            "model": record.model,
            "endpoint": record.endpoint,
            "stream": record.stream,
            "backend": record.backend,
            "status": record.status,
            "error": record.error,
            "attempts": len(record.decision.attempts),
            "retries": record.retries,
            "attempt_log": [
                {"backend": a.backend, "outcome": a.outcome, "duration_ms": round(a.duration_ms, 3)}
                for a in record.decision.attempts
            ],
            "deciding_policy": record.deciding_policy(self._weights.get(record.route, {})).name,
            "reasons": _reasons(record),
            "prompt_tokens": prompt,
            "cached_tokens": cached,
            "predicted_cached_tokens": record.predicted_cached_tokens,
            "completion_tokens": completion,
            "ttft_ms": record.ttft_s * 1000.0 if record.ttft_s is not None else None,
            "tpot_ms": tpot * 1000.0 if tpot is not None else None,
            "e2e_ms": record.e2e_s * 1000.0,
            "overhead_ms": record.overhead_s * 1000.0,
            "decision_us": decision.total_us,
            "cost_usd": record.cost_usd(self._prices.lookup(record.backend, record.model)),
            "priority": held.priority if held is not None else None,
            "admission": held.outcome if held is not None else None,
            "queue_ms": held.waited_ms if held is not None else None,
            "cascade": record.cascade.describe() if record.cascade is not None else None,
            "prompt": self._prompt(record) if self._keep_prompts else None,
        }

    def _prompt(self, record: RequestRecord) -> str | None:
        """JSON text, serialised here (not on the loop), so a queued row's size is bounded
        by max_prompt_bytes; a longer prompt is kept as its first bytes, marked cut."""
        body = record.body
        if body is None:
            return None
        raw = orjson.dumps({k: body[k] for k in _PROMPT_FIELDS if k in body})
        if len(raw) <= self._max_prompt_bytes:
            return raw.decode()
        cut = raw[: self._max_prompt_bytes].decode("utf-8", errors="ignore")
        return orjson.dumps({"truncated": True, "bytes": len(raw), "text": cut}).decode()


def refused_row(refusal: Refusal) -> dict[str, Any]:
    """A refusal as a `requests` row: the columns a record has, those of a decision,
    an attempt and usage empty."""
    e2e_ms = refusal.e2e_s * 1000.0
    return {
        "created_at": datetime.fromtimestamp(refusal.at, UTC),
        "decision_id": "",
        "key_id": refusal.key_id,
        "team": refusal.team,
        "route": refusal.route or "",
        "model": "",
        "endpoint": refusal.endpoint,
        "stream": False,
        "backend": None,
        "status": refusal.status,
        "error": refusal.code,
        "attempts": 0,
        "retries": 0,
        "attempt_log": [],
        "deciding_policy": "none",
        "reasons": {"refused": refusal.reason},
        "prompt_tokens": 0,
        "cached_tokens": 0,
        "predicted_cached_tokens": 0,
        "completion_tokens": 0,
        "ttft_ms": None,
        "tpot_ms": None,
        "e2e_ms": e2e_ms,
        "overhead_ms": e2e_ms,
        "decision_us": 0.0,
        "cost_usd": 0.0,
        "priority": None,
        "admission": None,
        "queue_ms": None,
        "cascade": None,
        "prompt": None,
    }


def _reasons(record: RequestRecord) -> dict[str, str]:
    """The chosen backend's reasons, one per policy, and the picker's."""
    decision = record.decision.decision
    out: dict[str, str] = {}
    for report in decision.candidates:
        if report.backend == decision.chosen:
            out.update({name: verdict.reason for name, verdict in report.verdicts.items()})
            out.update({name: score.reason for name, score in report.scores.items()})
    out[decision.picker] = decision.picker_reason
    held = record.decision.held
    if held is not None:
        out["flow-control"] = held.reason
    if record.reason is not None:
        out["refused"] = record.reason
    return out

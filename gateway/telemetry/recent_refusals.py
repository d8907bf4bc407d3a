"""The dashboard's list of recent refusals: the last few of each status and code.

Fed on the telemetry thread by the refusals the record bucket let through
(`Refusal.sampled`) and by the records of refusals after a decision (flow control's, which
carry a `reason`); read by the dashboard's data endpoint, a lock keeping the two apart.
Bounded: `per_code` entries for each of at most `max_codes` (status, code) pairs, so one
flooding code cannot push the others out; the newest `shown` of them are served.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from gateway.telemetry.refusals import Refusal

if TYPE_CHECKING:
    from gateway.telemetry.record import RequestRecord
    from gateway.telemetry.refusals import RefusalItem, RefusalKey


class RecentRefusals:
    name = "refused"

    def __init__(self, max_codes: int, *, per_code: int = 5, shown: int = 50) -> None:
        self._max_codes = max_codes
        self._per_code = per_code
        self._shown = shown
        self._kept: dict[RefusalKey, deque[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def consume(self, record: RequestRecord) -> None:
        if record.reason is None:
            return
        entry = {
            "at": record.at,
            "status": record.status,
            "code": record.error,
            "route": record.route or None,
            "key_id": record.key_id,
            "endpoint": record.endpoint,
            "reason": record.reason,
            "decision": record.decision.decision.id,
        }
        self._keep((record.status, record.error or ""), entry)

    def refused(self, item: RefusalItem) -> None:
        if not isinstance(item, Refusal) or not item.sampled:
            return
        entry = {
            "at": item.at,
            "status": item.status,
            "code": item.code,
            "route": item.route,
            "key_id": item.key_id,
            "endpoint": item.endpoint,
            "reason": item.reason,
            "decision": None,
        }
        self._keep((item.status, item.code), entry)

    def rows(self) -> list[dict[str, Any]]:
        """The newest `shown` refusals kept, newest first."""
        with self._lock:
            kept = [entry for entries in self._kept.values() for entry in entries]
        kept.sort(key=lambda entry: entry["at"], reverse=True)
        return kept[: self._shown]

    def _keep(self, key: RefusalKey, entry: dict[str, Any]) -> None:
        with self._lock:
            entries = self._kept.get(key)
            if entries is None:
                if len(self._kept) >= self._max_codes:
                    return
                entries = self._kept[key] = deque(maxlen=self._per_code)
            entries.append(entry)

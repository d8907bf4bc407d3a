"""The access log: one JSON line per request, rendered on the telemetry thread."""

from __future__ import annotations

import logging
from typing import Any

import orjson

from gateway.telemetry.record import RequestRecord

logger = logging.getLogger("switchyard.access")


class AccessLog:
    name = "log"

    def __init__(self) -> None:
        self.written = 0

    def consume(self, record: RequestRecord) -> None:
        if not logger.isEnabledFor(logging.INFO):
            return
        line: dict[str, Any] = {
            "event": "request",
            "status": record.status,
            "backend": record.backend,
            "duration_ms": round(record.e2e_s * 1000.0, 3),
            "error": record.error,
            "key_id": record.key_id,
            "decision": orjson.Fragment(record.decision.rendered()),
        }
        if record.chunks is not None:
            line["chunks"] = record.chunks
        logger.info(orjson.dumps(line).decode())
        self.written += 1

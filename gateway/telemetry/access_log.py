"""The access log: one line per request, rendered on the telemetry thread.

`line` (the default) is for a person at a terminal: route, backend, status, time, cached
and prompt tokens, decision id (`GET /v1/switchyard/decisions/{id}` has the rest).
`json` writes the whole record with its decision, for machines.

Each line is its own `LogRecord`, so every handler (a user's, pytest's caplog) still sees
one record per request, stamped with the time the request finished. The records are copies
of one the logger makes per batch (a custom record factory's fields included): making each
with `logger.info` (caller lookup, the record's dozen system calls) cost more than the
line. The pipe calls `flush()` after each batch; `line` mode's handler
(`gateway.process.terminal.BatchedStreamHandler`) writes the batch's lines then, in one write.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

import orjson

if TYPE_CHECKING:
    from gateway.telemetry.record import RequestRecord

logger = logging.getLogger("switchyard.access")


class AccessLog:
    name = "log"

    def __init__(self, mode: Literal["line", "json"] = "line") -> None:
        self.mode = mode
        self.written = 0
        self._template: logging.LogRecord | None = None

    def consume(self, record: RequestRecord) -> None:
        if not logger.isEnabledFor(logging.INFO):
            return
        line = concise_line(record) if self.mode == "line" else json_line(record)
        logger.handle(self._log_record(line, record.at + record.e2e_s))
        self.written += 1

    def flush(self) -> None:
        """The end of a batch: the logger's own handlers write what they hold."""
        self._template = None  # the next batch's records are made afresh
        for handler in logger.handlers:
            handler.flush()

    def _log_record(self, line: str, finished_at: float) -> logging.LogRecord:
        template = self._template
        if template is None:
            template = self._template = logger.makeRecord(
                logger.name, logging.INFO, __file__, 0, "", (), None, "consume"
            )
        made = logging.LogRecord.__new__(type(template))
        made.__dict__.update(template.__dict__)
        made.msg = line
        made.created = finished_at
        made.msecs = int((finished_at - int(finished_at)) * 1000) + 0.0  # as LogRecord does
        made.relativeCreated = template.relativeCreated + (finished_at - template.created) * 1000
        return made


def concise_line(record: RequestRecord) -> str:
    """`default -> engine-b 200 412ms cached 3,968/4,102 tok  decision 3f9a…` (the log
    handler puts the time in front)."""
    parts = [
        f"{record.route} -> {record.backend or '(none)'}",
        str(record.status),
        f"{round(record.e2e_s * 1000.0)}ms",
    ]
    if record.stream:
        parts.append("stream")
    parts.append(_tokens(record))
    if record.retries:
        parts.append(f"{record.retries} {'retry' if record.retries == 1 else 'retries'}")
    if record.error is not None:
        parts.append(f"error {record.error}")
    return f"{' '.join(parts)}  decision {record.decision.decision.id}"


def _tokens(record: RequestRecord) -> str:
    usage = record.usage
    if usage is None:
        return "no usage"
    if usage.cached_tokens is None:  # the backend does not say what it had cached
        return f"prompt {usage.prompt_tokens:,} tok"
    return f"cached {usage.cached_tokens:,}/{usage.prompt_tokens:,} tok"


def json_line(record: RequestRecord) -> str:
    """The whole record: the API called, status, backend, duration, error, key id, the
    decision."""
    line: dict[str, Any] = {
        "event": "request",
        "endpoint": record.endpoint,
        "status": record.status,
        "backend": record.backend,
        "duration_ms": round(record.e2e_s * 1000.0, 3),
        "error": record.error,
        "key_id": record.key_id,
        "team": record.team,
        "decision": orjson.Fragment(record.decision.rendered()),
    }
    if record.chunks is not None:
        line["chunks"] = record.chunks
    return orjson.dumps(line).decode()

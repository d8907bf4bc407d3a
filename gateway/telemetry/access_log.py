"""The access log: one line per request, rendered on the telemetry thread.

`line` (the default) is for a person at a terminal: route, backend, status, time, cached
and prompt tokens, decision id (`GET /v1/switchyard/decisions/{id}` has the rest).
`json` writes the whole record with its decision, for machines.

A request the gateway refused itself gets a line of its own shape (route or `(no route)`,
`(refused)`, status, time, code, key id, reason); `gateway.telemetry.refusals` decides on
the event loop which refusals get one, and the lines it held back come as one summary line
per status and code (`Suppressed`).

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

from gateway.telemetry.refusals import Suppressed

if TYPE_CHECKING:
    from gateway.cascade.note import CascadeNote
    from gateway.telemetry.record import RequestRecord
    from gateway.telemetry.refusals import Refusal, RefusalItem

logger = logging.getLogger("switchyard.access")


class AccessLog:
    name = "log"

    def __init__(self, mode: Literal["line", "json"] = "line") -> None:
        self.mode = mode
        self.written = 0
        self._template: logging.LogRecord | None = None

    def consume(self, record: RequestRecord) -> None:
        if not record.logged or not logger.isEnabledFor(logging.INFO):
            return
        line = concise_line(record) if self.mode == "line" else json_line(record)
        logger.handle(self._log_record(line, record.at + record.e2e_s))
        self.written += 1

    def refused(self, item: RefusalItem) -> None:
        """A refusal its bucket let be logged, or a summary of the lines one held back."""
        if not logger.isEnabledFor(logging.INFO):
            return
        plain = self.mode == "line"
        if isinstance(item, Suppressed):
            line, at = suppressed_line(item) if plain else suppressed_json(item), item.at
        elif item.logged:
            line, at = refused_line(item) if plain else refused_json(item), item.at + item.e2e_s
        else:
            return
        logger.handle(self._log_record(line, at))
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
    handler puts the time in front); a refusal after the decision has the refused shape
    (`refused_line`)."""
    if record.reason is not None:
        refused = _refused(
            record.route, record.status, record.e2e_s, record.error, record.key_id, record.reason
        )
        return f"{refused}  decision {record.decision.decision.id}"
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
    if record.cascade is not None:
        parts.append(_cascade(record.cascade))
    return f"{' '.join(parts)}  decision {record.decision.decision.id}"


def _cascade(note: CascadeNote) -> str:
    """` cascade auto tier 1 escalated: loop, tool_calls` (the checks it failed)."""
    failed = ", ".join(f.check for f in note.failures)
    return f" cascade {note.cascade} tier {note.tier} {note.outcome}" + (
        f": {failed}" if failed else ""
    )


def refused_line(refusal: Refusal) -> str:
    """`default -> (refused) 429 1ms error rate_limit_exceeded  key key_ab12  reason: …`;
    `(no route)` when the request named none that exists, no `key` when none was valid."""
    return _refused(
        refusal.route,
        refusal.status,
        refusal.e2e_s,
        refusal.code,
        refusal.key_id,
        refusal.reason,
    )


def suppressed_line(summary: Suppressed) -> str:
    """`(refused) 429 rate_limit_exceeded: 940 similar lines suppressed over 60s`."""
    return (
        f"(refused) {summary.status} {summary.code}: {summary.lines:,} similar "
        f"{'line' if summary.lines == 1 else 'lines'} suppressed over {round(summary.over_s)}s"
    )


def _refused(
    route: str | None,
    status: int,
    e2e_s: float,
    code: str | None,
    key_id: str | None,
    reason: str,
) -> str:
    head = f"{route or '(no route)'} -> (refused) {status} {round(e2e_s * 1000.0)}ms error {code}"
    key = f"  key {key_id}" if key_id else ""
    return f"{head}{key}  reason: {reason}"


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
    if record.reason is not None:
        line["reason"] = record.reason
    if record.cascade is not None:
        line["cascade"] = record.cascade.describe()
    return orjson.dumps(line).decode()


def refused_json(refusal: Refusal) -> str:
    """A refusal as `json_line` writes a record, with its reason and no decision (none
    was made)."""
    line = {
        "event": "refused",
        "endpoint": refusal.endpoint,
        "status": refusal.status,
        "route": refusal.route,
        "duration_ms": round(refusal.e2e_s * 1000.0, 3),
        "error": refusal.code,
        "key_id": refusal.key_id,
        "team": refusal.team,
        "reason": refusal.reason,
    }
    return orjson.dumps(line).decode()


def suppressed_json(summary: Suppressed) -> str:
    line = {
        "event": "suppressed",
        "status": summary.status,
        "error": summary.code,
        "lines": summary.lines,
        "over_s": round(summary.over_s, 3),
    }
    return orjson.dumps(line).decode()

"""Loads a workload trace (JSON Lines: meta, segment, request) and renders request bodies.

Segments are stored once, as text and as JSON-escaped bytes; a request keeps only segment
ids, so a body is a join of pre-escaped pieces built when it is sent, never up front.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

import orjson

_MAX_PROBLEMS_SHOWN = 20


class TraceError(ValueError):
    """A trace that cannot be replayed; each problem starts with `line N:`."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        shown = problems[:_MAX_PROBLEMS_SHOWN]
        more = len(problems) - len(shown)
        tail = f"\n  ... and {more} more" if more else ""
        super().__init__(f"{source}: {len(problems)} problem(s)\n  " + "\n  ".join(shown) + tail)


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    segments: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request line; timing is either `start_s` or `parent` + `after_s`."""

    index: int
    line: int
    id: str
    model: str
    messages: tuple[Message, ...]
    max_tokens: int
    stream: bool = True
    session: str | None = None
    tools: str | None = None
    start_s: float | None = None
    parent: str | None = None
    after_s: float | None = None
    priority: str | None = None
    """A priority class name ("interactive", "batch"), sent as a header when set."""
    tenant: str | None = None
    """Who the request is for, sent as a header when set."""


@dataclass(slots=True)
class Trace:
    """Segments, requests in line order, and each request's children."""

    source: str
    meta: dict[str, Any] = field(default_factory=dict)
    requests: list[TraceRequest] = field(default_factory=list)
    children: dict[str, list[TraceRequest]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    burst_s: tuple[float, float] | None = None
    """The meta's `burst_start_s` and `burst_end_s` (nominal trace s), when it has both."""
    _escaped: dict[str, bytes] = field(default_factory=dict)
    _tools: dict[str, bytes] = field(default_factory=dict)

    def message_text(self, message: Message) -> str:
        return "".join(self.texts[segment] for segment in message.segments)

    def tools(self, segment: str) -> list[Any]:
        parsed: list[Any] = orjson.loads(self._tools[segment])
        return parsed

    def body(self, request: TraceRequest, model: str) -> bytes:
        """The OpenAI chat request for `request`, sent as `model`."""
        parts = [b'{"model":', orjson.dumps(model), b',"messages":[']
        for i, message in enumerate(request.messages):
            parts += [b"," if i else b"", b'{"role":', orjson.dumps(message.role)]
            parts += [b',"content":"', *(self._escaped[s] for s in message.segments), b'"}']
        parts.append(b'],"max_tokens":%d' % request.max_tokens)
        if request.stream:
            parts.append(b',"stream":true,"stream_options":{"include_usage":true}')
        else:
            parts.append(b',"stream":false')
        if request.tools is not None:
            parts += [b',"tools":', self._tools[request.tools]]
        parts.append(b"}")
        return b"".join(parts)

    def nominal_start_s(self, response_s: float = 0.0) -> dict[str, float]:
        """When each request would be sent if every response took `response_s` (by default
        no time), in trace seconds: a child `after` its parent's response."""
        due: dict[str, float] = {}
        for request in self.requests:
            if request.start_s is not None:
                due[request.id] = request.start_s
            else:
                assert request.parent is not None and request.after_s is not None
                due[request.id] = due[request.parent] + response_s + request.after_s
        return due

    def nominal_span_s(self) -> float:
        return max(self.nominal_start_s().values(), default=0.0)


def load_trace(path: str | Path, limit: int | None = None) -> Trace:
    """Read and validate a trace; with `limit`, only the first `limit` requests.

    Requests depend only on earlier lines, so the first N requests are closed under
    their dependencies and reading stops at the (N+1)th. Raises `TraceError`.
    """
    source = str(path)
    with Path(path).open("rb") as lines:
        return parse_trace(lines, source, limit)


def parse_trace(lines: Iterable[bytes], source: str, limit: int | None = None) -> Trace:
    trace = Trace(source)
    problems: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            item = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            problems.append(f"line {number}: not valid JSON ({exc})")
            continue
        full = limit is not None and len(trace.requests) >= limit
        if full and isinstance(item, dict) and item.get("kind") == "request":
            break
        problems += [f"line {number}: {p}" for p in _read_item(trace, item, number)]
    if not trace.requests and not problems:
        problems.append("line 1: the trace holds no requests")
    if problems:
        raise TraceError(source, problems)
    return trace


def _read_item(trace: Trace, item: object, number: int) -> list[str]:
    if not isinstance(item, dict):
        return ["expected a JSON object"]
    kind = item.get("kind")
    if kind == "meta":
        trace.meta.update(item)
        return _read_burst(trace)
    if kind == "segment":
        return _read_segment(trace, item)
    if kind == "request":
        return _read_request(trace, item, number)
    return [f"unknown kind {kind!r} (expected meta, segment or request)"]


def _read_burst(trace: Trace) -> list[str]:
    """A burst workload's window (bench/workloads/burst.py): both ends or neither."""
    start, end = trace.meta.get("burst_start_s"), trace.meta.get("burst_end_s")
    if start is None and end is None:
        return []
    if not (_seconds(start) and _seconds(end) and start <= end):
        return ["meta: 'burst_start_s' and 'burst_end_s' must be numbers >= 0, start <= end"]
    trace.burst_s = (float(start), float(end))
    return []


def _read_segment(trace: Trace, item: dict[str, Any]) -> list[str]:
    segment, text = item.get("id"), item.get("text")
    if not isinstance(segment, str) or not segment:
        return ["segment: 'id' must be a non-empty string"]
    if not isinstance(text, str):
        return [f"segment {segment!r}: 'text' must be a string"]
    if segment in trace.texts:
        return [f"segment {segment!r}: duplicate id"]
    try:
        escaped = orjson.dumps(text)[1:-1]
    except orjson.JSONEncodeError as exc:  # lone surrogates
        return [f"segment {segment!r}: text cannot be encoded ({exc})"]
    trace.texts[segment] = text
    trace._escaped[segment] = escaped
    return []


def _read_request(trace: Trace, item: dict[str, Any], number: int) -> list[str]:
    problems: list[str] = []
    request_id = item.get("id")
    if not isinstance(request_id, str) or not request_id:
        return ["request: 'id' must be a non-empty string"]
    if request_id in trace.children:
        return [f"request {request_id!r}: duplicate id"]
    messages = _messages(trace, item.get("messages"), problems)
    tools = _tools(trace, item.get("tools"), problems)
    timing = _timing(trace, item, problems)
    scalars = _scalars(item, problems)
    priority, tenant = _label(item, "priority", problems), _label(item, "tenant", problems)
    if problems or scalars is None:
        trace.children[request_id] = []  # so that its children don't report it missing
        return [f"request {request_id!r}: {p}" for p in problems]
    model, max_tokens, stream, session = scalars
    start_s, parent, after_s = timing
    request = TraceRequest(
        index=len(trace.requests),
        line=number,
        id=request_id,
        model=model,
        messages=messages,
        max_tokens=max_tokens,
        stream=stream,
        session=session,
        tools=tools,
        start_s=start_s,
        parent=parent,
        after_s=after_s,
        priority=priority,
        tenant=tenant,
    )
    trace.requests.append(request)
    trace.children[request_id] = []
    if request.parent is not None:
        trace.children[request.parent].append(request)
    return []


def _scalars(item: dict[str, Any], problems: list[str]) -> tuple[str, int, bool, str | None] | None:
    model, max_tokens = item.get("model"), item.get("max_tokens")
    stream, session = item.get("stream", True), item.get("session")
    before = len(problems)
    if not isinstance(model, str) or not model:
        problems.append("'model' must be a non-empty string")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        problems.append("'max_tokens' must be a positive integer")
    if not isinstance(stream, bool):
        problems.append("'stream' must be true or false")
    if session is not None and not isinstance(session, str):
        problems.append("'session' must be a string")
    if len(problems) > before:
        return None
    assert isinstance(model, str) and isinstance(max_tokens, int) and isinstance(stream, bool)
    return model, max_tokens, stream, session if isinstance(session, str) else None


def _label(item: dict[str, Any], name: str, problems: list[str]) -> str | None:
    """An optional field sent as a header (`priority`, `tenant`): absent or null is none."""
    value = item.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        problems.append(f"'{name}' must be a non-empty string")
        return None
    # Refused here rather than by aiohttp mid-run, or trimmed by HTTP on the way.
    if not (value.isascii() and value.isprintable()) or value != value.strip():
        problems.append(f"'{name}' must be printable ASCII without surrounding spaces")
        return None
    return value


def _messages(trace: Trace, value: object, problems: list[str]) -> tuple[Message, ...]:
    if not isinstance(value, list) or not value:
        problems.append("'messages' must be a non-empty array")
        return ()
    messages = []
    for i, message in enumerate(value):
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(role, str) or not isinstance(content, list):
            problems.append(f"messages[{i}]: needs a string 'role' and a 'content' list")
            continue
        unknown = [s for s in content if not isinstance(s, str) or s not in trace.texts]
        if unknown:
            problems.append(f"messages[{i}]: unknown segment(s) {_shorten(unknown)}")
        messages.append(Message(role, tuple(content)))
    return tuple(messages)


def _tools(trace: Trace, value: object, problems: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in trace.texts:
        problems.append(f"'tools': unknown segment {value!r}")
        return None
    if value not in trace._tools:
        try:
            parsed = orjson.loads(trace.texts[value])
        except orjson.JSONDecodeError as exc:
            problems.append(f"'tools': segment {value!r} is not JSON ({exc})")
            return None
        if not isinstance(parsed, list):
            problems.append(f"'tools': segment {value!r} is not a JSON array")
            return None
        trace._tools[value] = orjson.dumps(parsed)
    return value


def _timing(
    trace: Trace, item: dict[str, Any], problems: list[str]
) -> tuple[float | None, str | None, float | None]:
    start, parent, after = item.get("start"), item.get("parent"), item.get("after")
    if start is not None:
        if parent is not None or after is not None:
            problems.append("has both 'start' and 'parent'/'after'")
        elif not _seconds(start):
            problems.append("'start' must be a finite number >= 0")
        return float(start) if _seconds(start) else None, None, None
    if parent is None and after is None:
        problems.append("needs 'start', or 'parent' and 'after'")
        return None, None, None
    if not isinstance(parent, str) or parent not in trace.children:
        problems.append(f"'parent' must name an earlier request (got {parent!r})")
    if not _seconds(after):
        problems.append("'after' must be a finite number >= 0")
    parent_id = parent if isinstance(parent, str) else None
    return None, parent_id, float(after) if _seconds(after) else 0.0


def _seconds(value: object) -> TypeGuard[float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _shorten(items: list[Any]) -> str:
    shown = ", ".join(repr(i) for i in items[:3])
    return shown + (f" (+{len(items) - 3} more)" if len(items) > 3 else "")

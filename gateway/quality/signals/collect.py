"""Response bytes to the response part of an `Observation`: a cheap stream tap, one parse.

`StreamCollector.feed` sits on the relay path, so it only appends bytes to a bounded
buffer; `finish()` parses the SSE once after the last byte reached the client, its events
read by the product's one decoder (`providers.transport.sse`).
`collect_body` does the same for a non-streamed JSON body. Both never raise on bad
input: they report it in `CollectedResponse.malformed`.

Reasoning text (`reasoning_content`, or `reasoning` as some servers name it) is kept
apart from `content`: the quality signals judge the answer, and a thinking model that
spent its budget on reasoning has not sent an empty answer in the same sense.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

import orjson

from gateway.quality.signals.response_assembly import Assembly, Payload, parse_json
from gateway.quality.signals.stream_template import parse_templated
from providers.transport.sse import SseDecodeError, SseDecoder

if TYPE_CHECKING:
    from gateway.quality.signals.observation import ToolCallSeen

KIB = 1024


@dataclass(frozen=True, slots=True)
class CollectBounds:
    """How much of a response is kept for inspection."""

    max_bytes: int = 256 * KIB
    """Stream bytes kept for parsing; past it only a rolling tail is kept (`capped`).
    Per stream in flight, so it bounds the gateway's memory: 1,000 long streams hold
    at most 256 MiB (plus a copy of one at a time while it is parsed)."""
    tail_bytes: int = 8 * KIB
    """Rolling tail kept after the cap, for finish_reason, usage, errors and [DONE]."""
    max_content_chars: int = 64 * KIB
    """Characters of content (and, separately, of reasoning) kept."""
    max_tool_calls: int = 32
    max_argument_chars: int = 16 * KIB
    """Characters of each tool call's arguments kept."""


@dataclass(frozen=True, slots=True)
class CollectedResponse:
    """What a response said, for choice 0, bounded by `CollectBounds`."""

    content: str = ""
    content_cut: bool = False
    """The content was longer than `max_content_chars`; `content` is its start."""
    reasoning: str = ""
    reasoning_cut: bool = False
    tool_calls: tuple[ToolCallSeen, ...] = ()
    """In order of first appearance; each says whether its arguments were cut."""
    tool_calls_cut: bool = False
    """More tool calls than `max_tool_calls` arrived; the rest were dropped."""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    done: bool = False
    """A stream ended with `data: [DONE]`; a JSON body parsed as a whole object."""
    error: str | None = None
    """The message of an error event (`data: {"error": ...}`) or error body."""
    malformed: str | None = None
    """The first thing that could not be parsed, in words; None when all parsed."""
    capped: bool = False
    """The stream was longer than `max_bytes`; text and tool calls are of its start."""
    bytes_seen: int = 0


class StreamCollector:
    """Taps an OpenAI chat/completions (or legacy completions) SSE stream as it passes."""

    __slots__ = ("_bounds", "_buffer", "_capped", "_max_bytes", "_seen", "_tail")

    def __init__(self, bounds: CollectBounds | None = None) -> None:
        self._bounds = bounds or CollectBounds()
        self._max_bytes = self._bounds.max_bytes
        self._buffer = bytearray()
        self._tail = bytearray()
        self._capped = False
        self._seen = 0

    @property
    def capped(self) -> bool:
        """More than `max_bytes` arrived; later bytes only feed the rolling tail."""
        return self._capped

    def feed(self, chunk: bytes) -> None:
        """Keep a chunk as it passes; O(len(chunk)), no parsing."""
        self._seen += len(chunk)
        if self._capped:
            self._keep_tail(chunk)
            return
        self._buffer += chunk
        if self._seen > self._max_bytes:  # the buffer holds every byte seen until capped
            self._cap()

    def finish(self) -> CollectedResponse:
        """Parse what was kept, once; call after the stream's last byte."""
        buffer = bytes(self._buffer)
        self._buffer = bytearray()  # freed now, not when the request's closures go
        if not self._capped and buffer.lstrip().startswith(b"{"):
            # Not SSE at all: an error (or a whole answer) sent as a plain JSON body.
            return collect_body(buffer, self._bounds)
        assembly = _assembly(self._bounds)
        # A capped buffer ends inside an event: its last line is not evidence of anything.
        _parse_sse(buffer, assembly, trust_last_line=not self._capped)
        if self._capped:
            assembly.text_frozen = True
            _parse_sse(_whole_lines(bytes(self._tail)), assembly, trust_last_line=True)
        return _result(assembly, capped=self._capped, bytes_seen=self._seen)

    def _cap(self) -> None:
        self._capped = True
        self._keep_tail(bytes(self._buffer[self._max_bytes :]))
        del self._buffer[self._max_bytes :]

    def _keep_tail(self, data: bytes) -> None:
        limit = self._bounds.tail_bytes
        if len(data) >= limit:
            self._tail = bytearray(data[-limit:])
            return
        self._tail += data
        # Trimming only at twice the bound keeps the cost amortised O(1) per byte.
        if len(self._tail) > 2 * limit:
            del self._tail[:-limit]


def collect_body(
    body: bytes, bounds: CollectBounds | None = None, document: object = None
) -> CollectedResponse:
    """The same facts from a non-streamed chat/completions or completions JSON body;
    `document` is `body` already parsed, if it was."""
    assembly = _assembly(bounds or CollectBounds())
    payload: Payload | None
    if isinstance(document, dict):
        payload, problem = document, ""
    else:
        payload, problem = parse_json(body)
    if payload is None:
        assembly.report_malformed(f"response body is not a JSON object: {problem}")
    else:
        assembly.add_body(payload)
        assembly.done = True
    return _result(assembly, capped=False, bytes_seen=len(body))


def observation_fields(collected: CollectedResponse) -> ResponseFields:
    """The `Observation` fields a response fills; the request and the outcome fill the rest.

    `Observation(backend=..., model=..., at=..., outcome=..., **observation_fields(c))`.
    """
    return ResponseFields(
        content=collected.content,
        reasoning=collected.reasoning,
        tool_calls=collected.tool_calls,
        finish_reason=collected.finish_reason,
        completion_tokens=collected.completion_tokens,
        prompt_tokens_reported=collected.prompt_tokens,
        inspected_bytes_capped=collected.capped or collected.content_cut,
    )


class ResponseFields(TypedDict):
    """The response's part of an `Observation`, by field name."""

    content: str
    reasoning: str
    tool_calls: tuple[ToolCallSeen, ...]
    finish_reason: str | None
    completion_tokens: int | None
    prompt_tokens_reported: int | None
    inspected_bytes_capped: bool


def _assembly(bounds: CollectBounds) -> Assembly:
    return Assembly(bounds.max_content_chars, bounds.max_tool_calls, bounds.max_argument_chars)


def _parse_sse(data: bytes, assembly: Assembly, *, trust_last_line: bool) -> None:
    """Dispatch each SSE event's data to the assembly; comments and other fields ignored."""
    unterminated = not data.endswith((b"\n", b"\r"))
    if unterminated and not trust_last_line:
        data = data[: max(data.rfind(b"\n"), data.rfind(b"\r")) + 1]
        unterminated = False
    decoder = SseDecoder(keep_event_types=True)
    try:
        payloads = decoder.feed(data)
        ended = len(payloads)
        payloads += decoder.flush()
    except SseDecodeError as exc:
        assembly.report_malformed(f"the stream is not server-sent events: {exc}")
        return
    event_types = decoder.event_types or []
    if trust_last_line and _parse_plain_sse(payloads, event_types, assembly):
        return
    for number, (payload, event_type) in enumerate(zip(payloads, event_types, strict=True)):
        # The last event, unless the stream ended with a line end, is cut inside its data.
        last = unterminated and number >= ended
        _dispatch(payload, number + 1, assembly, error_event=event_type == b"error", last=last)


def _parse_plain_sse(payloads: list[bytes], event_types: list[bytes], assembly: Assembly) -> bool:
    """The common shape (every event's data a JSON object or `[DONE]`, none an `error` event)
    parsed without a call per event: content events as a template (`stream_template`), or
    all events as one JSON array. False: not that shape, or bad JSON somewhere, and nothing
    was taken; the general path then says what is wrong."""
    if b"error" in event_types:
        return False
    taken = parse_templated(payloads, assembly)
    if taken is not None:
        return taken
    objects: list[bytes] = []
    done = False
    for payload in payloads:
        if not payload.startswith(b"{"):
            if payload == b"[DONE]":
                done = True
                continue
            return False
        objects.append(payload)
    try:
        events = orjson.loads(b"[" + b",".join(objects) + b"]")
    except orjson.JSONDecodeError:
        return False
    for event in events:
        if not isinstance(event, dict):
            return False
    for event in events:
        assembly.add_chunk(event)
    assembly.done = assembly.done or done
    return True


def _dispatch(
    data: bytes, number: int, assembly: Assembly, *, error_event: bool, last: bool
) -> None:
    if data.strip() == b"[DONE]":
        assembly.done = True
        return
    payload, problem = parse_json(data)
    if payload is not None:
        assembly.add_chunk(payload, is_error_event=error_event)
    elif not last:
        # A stream cut inside its final event is a cut stream (the relay knows), not bad JSON.
        assembly.report_malformed(f"bad JSON in the data of event {number}: {problem}")


def _whole_lines(tail: bytes) -> bytes:
    """The tail from its first line break on: its first line is usually a fragment."""
    breaks = [index for index in (tail.find(b"\n"), tail.find(b"\r")) if index >= 0]
    return tail[min(breaks) :] if breaks else b""


def _result(assembly: Assembly, *, capped: bool, bytes_seen: int) -> CollectedResponse:
    calls, calls_cut = assembly.tool_calls()
    return CollectedResponse(
        content=assembly.content.text(),
        content_cut=assembly.content.cut,
        reasoning=assembly.reasoning.text(),
        reasoning_cut=assembly.reasoning.cut,
        tool_calls=calls,
        tool_calls_cut=calls_cut,
        finish_reason=assembly.finish_reason,
        prompt_tokens=assembly.usage.prompt_tokens,
        completion_tokens=assembly.usage.completion_tokens,
        cached_tokens=assembly.usage.cached_tokens,
        done=assembly.done,
        error=assembly.error,
        malformed=assembly.malformed,
        capped=capped,
        bytes_seen=bytes_seen,
    )


__all__ = [
    "CollectBounds",
    "CollectedResponse",
    "ResponseFields",
    "StreamCollector",
    "collect_body",
    "observation_fields",
]

"""Relaying a backend's OpenAI stream in another client format: the chunk loop the
translating ingresses share, and how a stream ends that the gateway cannot translate.

The relay (`streaming.relay`) hands over the backend's OpenAI SSE bytes. A
`TranslatedStream` decodes them, reads each chunk once and tells the client format's
`ClientEvents` what arrived: the first chunk, each delta, the end (`[DONE]`) with what the
stream said of its answer (`StreamSummary`), or a failure. The format writes its own
events. Nothing is buffered beyond an unfinished SSE line.

Most chunks of a stream carry a few words of text and nothing else. Once the stream has
opened, such a chunk is read straight from its JSON (`text_only`) and handed to the format
as text, without building the validated reply; any other chunk (the first, a finish, the
usage, reasoning, tool calls, an error, anything unusual) is read whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import orjson

from gateway.http.openai_reply import (
    UNREADABLE_CHUNK,
    ChatReply,
    MessageOut,
    read_chunk,
    read_document,
)
from gateway.http.relay.streaming import RelayState, StreamOutcome, backend_error_event
from providers.errors import ApiError, UpstreamProtocolError
from providers.transport.sse import SseDecodeError, SseDecoder

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from providers.usage import Usage

DONE = b"[DONE]"


@dataclass(slots=True)
class StreamSummary:
    """What a stream has said of its answer so far."""

    finish_reason: str | None = None
    stop_reason: str | int | None = None
    """vLLM's extension: the stop string (or token id) that ended the answer."""
    usage: Usage | None = None
    """From the usage chunk the gateway asks for; None when the backend sent none."""
    output_chunks: int = 0
    """Chunks whose delta showed something: the output estimate when usage is missing."""


class ClientEvents(Protocol):
    """One stream's events in a client's format, written as the chunks arrive."""

    def start(self, chunk: ChatReply | None) -> bytes:
        """The events that open the stream, from its first chunk (None when `[DONE]` comes
        first); nothing once it has opened."""
        ...

    def delta(self, delta: MessageOut) -> bytes:
        """The events for one chunk's delta (often none); raises UpstreamProtocolError for a
        delta the format cannot express."""
        ...

    def text(self, text: str) -> bytes:
        """The events for a delta of answer text (not empty) and nothing else: what `delta`
        makes of it."""
        ...

    def end(self, summary: StreamSummary) -> bytes:
        """The events that close the stream after `[DONE]`."""
        ...

    def fail(self, error: ApiError) -> bytes:
        """The events that end the stream with `error`."""
        ...


class TranslatedStream:
    """One stream's translation. `finished` once it has ended (`[DONE]`, a backend's error
    event, `fail`); `failure` when the backend's bytes could not be read (the caller then
    ends the stream with `fail`)."""

    def __init__(self, events: ClientEvents) -> None:
        self._events = events
        self._sse = SseDecoder()
        self._summary = StreamSummary()
        self._opened = False
        """The first chunk has been read (whole): the format's stream has opened."""
        self.finished = False
        self.failure: UpstreamProtocolError | None = None

    def feed(self, data: bytes) -> bytes:
        """The events for the chunks `data` completes (often none). Unreadable data sets
        `failure`; what was translated before it is still returned."""
        out: list[bytes] = []
        try:
            for payload in self._sse.feed(data):
                if self.finished:
                    break
                out.append(self._translate(payload))
        except SseDecodeError as exc:
            self.failure = UpstreamProtocolError(f"backend sent a malformed stream: {exc}")
        except UpstreamProtocolError as exc:
            self.failure = exc
        return b"".join(out)

    def fail(self, error: ApiError) -> bytes:
        """End the stream with `error`, as the client's format ends a failed one."""
        self.finished = True
        return self._events.fail(error)

    def _translate(self, payload: bytes) -> bytes:
        events, summary = self._events, self._summary
        if payload == DONE:
            self.finished = True
            return events.start(None) + events.end(summary)
        if self._opened:
            try:
                document = orjson.loads(payload)
            except orjson.JSONDecodeError:
                raise UpstreamProtocolError(UNREADABLE_CHUNK) from None
            text = text_only(document)
            if text is not None:
                if not text:
                    return b""
                summary.output_chunks += 1
                return events.text(text)
            chunk, usage = read_document(document, UNREADABLE_CHUNK)
        else:
            chunk, usage = read_chunk(payload)
            self._opened = True
        if chunk.error is not None:
            # The relay records it as the backend's failure too (`RelayState.check_end`).
            return self.fail(backend_error_event())
        out = events.start(chunk)
        summary.usage = usage or summary.usage
        choice = chunk.first
        if choice is not None:
            shown = events.delta(choice.delta)
            if shown:
                summary.output_chunks += 1
            out += shown
            if choice.finish_reason is not None:
                summary.finish_reason = choice.finish_reason
                summary.stop_reason = choice.stop_reason
        return out


_IGNORED_IF_NULL = frozenset({"reasoning_content", "reasoning", "tool_calls", "refusal"})
"""Delta fields a backend may send as null on a text chunk; any value makes it read whole."""


def text_only(document: object) -> str | None:
    """The text of a chunk that holds nothing else the translation reads: no error or usage,
    one choice (index 0) unfinished, a delta of text (and its role at most); None for any
    other chunk, which is then read whole (`read_document`)."""
    if type(document) is not dict or "error" in document or document.get("usage") is not None:
        return None
    choices = document.get("choices")
    if type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("index", 0) != 0:
        return None
    if choice.get("finish_reason") is not None or choice.get("stop_reason") is not None:
        return None
    delta = choice.get("delta")
    if type(delta) is not dict:
        return None
    text = delta.get("content")
    if type(text) is not str:
        return None
    for key, value in delta.items():
        if key not in ("content", "role") and (value is not None or key not in _IGNORED_IF_NULL):
            return None
    return text


class Translated:
    """A translated stream as the splice's `Shape`: each OpenAI chunk's bytes in the
    client's format; a translation that breaks, or a stream that ends before its end, ends
    the client's stream with the format's error (recorded as the relay records its own)."""

    __slots__ = ("_outcome", "_stream", "done")

    def __init__(self, outcome: StreamOutcome, stream: TranslatedStream) -> None:
        self._outcome = outcome
        self._stream = stream
        self.done = False

    def chunk(self, data: bytes) -> bytes:
        if self.done or not data:
            return b""
        stream = self._stream
        out = stream.feed(data)
        if stream.failure is not None:
            self.done = True
            return out + _broken(self._outcome, stream, stream.failure)
        return out

    def end(self) -> bytes:
        if self._stream.finished or self.done:
            return b""
        self.done = True
        early = UpstreamProtocolError("backend ended the stream before its end")
        return _broken(self._outcome, self._stream, early)

    def failed(self, state: RelayState, exc: ApiError) -> bytes:
        state.failed(exc)  # the outcome's error; its OpenAI event is not the client's
        self.done = True
        return self._stream.fail(exc)


async def relay_translated(
    chunks: AsyncIterator[bytes], outcome: StreamOutcome, stream: TranslatedStream
) -> AsyncIterator[bytes]:
    """The client's events for the relayed OpenAI bytes. The relay's own closing error event
    (it sets `outcome.error` first) ends the stream as failed; so does a stream this
    translation cannot read or that ends early, which the gateway then ends itself."""
    shape = Translated(outcome, stream)
    try:
        async for chunk in chunks:
            if outcome.error is not None:
                yield stream.fail(outcome.error)
                return
            if out := shape.chunk(chunk):
                yield out
            if shape.done:
                return
        if out := shape.end():
            yield out
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def _broken(
    outcome: StreamOutcome, stream: TranslatedStream, error: UpstreamProtocolError
) -> bytes:
    """The gateway ends a stream it cannot translate: recorded as the relay records its own."""
    outcome.error = error
    outcome.status = error.code or "error"
    return stream.fail(error)

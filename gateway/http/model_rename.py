"""Answers name the model the client asked for: the route's public name, not the upstream id.

A route may ask each backend for another model id (`qwen2.5-7b-instruct-q4_k_m` on one,
`Qwen/Qwen2.5-7B-Instruct-Turbo` on another); the client sees the route's name either way.
Only the `"model":"..."` field is touched, in place: a whole body's first one, and the
first one of each line of a stream (every OpenAI SSE event is one `data:` line of JSON).
Nothing is parsed or re-serialised. A `"model"` key can only appear in JSON as a key
(inside a string its quotes are escaped), so the match cannot fall inside generated text.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from gateway.routing.decisions import DecisionRecord
    from providers.base import UpstreamResponse

_FIELD = re.compile(rb'"model"\s*:\s*"(?:[^"\\\n]|\\.)*"')
_MAX_HELD_BYTES = 64 * 1024
"""A line longer than this without its model field is passed on with the field as it is."""


def _field(public: str) -> bytes:
    return b'"model":' + orjson.dumps(public)


def served_model(record: DecisionRecord) -> str | None:
    """The upstream model id of the attempt that answered."""
    last = record.attempts[-1] if record.attempts else None
    return last.model if last is not None and last.outcome == "ok" else None


def renamed_response(
    response: UpstreamResponse, public: str, upstream: str | None
) -> UpstreamResponse:
    """`response` with its model field naming `public`, when the backend was asked for
    another model and answered JSON (the answer in the client's own API too)."""
    if upstream == public or "json" not in response.content_type:
        return response
    native = response.native_body
    if native is not None:
        # A Messages answer's tool_use `input` is a JSON object, whose own "model" key the
        # first-field regex could reach before the top level's: renamed parsed.
        document = orjson.loads(native)
        if isinstance(document, dict) and "model" in document:
            native = orjson.dumps({**document, "model": public})
    return replace(response, body=renamed_body(response.body, public), native_body=native)


def renamed_body(body: bytes, public: str) -> bytes:
    """`body` with its first model field naming `public` (as it was when it has none)."""
    match = _FIELD.search(body)
    if match is None:
        return body
    return body[: match.start()] + _field(public) + body[match.end() :]


class StreamRenamer:
    """Renames the model in each line of a stream whose chunks split lines anywhere.

    Until a line's model field has been seen, the line's bytes are held back (a client can
    use an SSE line only once its newline has arrived, so nothing is delayed that it could
    read); from the field on, they pass straight through.
    """

    __slots__ = ("_field", "_held", "_seeking")

    def __init__(self, public: str) -> None:
        self._field = _field(public)
        self._held = b""
        self._seeking = True

    def feed(self, chunk: bytes) -> bytes:
        """The bytes to relay now for `chunk` (possibly none)."""
        data = self._held + chunk if self._held else chunk
        self._held = b""
        out: list[bytes] = []
        pos, size = 0, len(data)
        while pos < size:
            newline = data.find(b"\n", pos)
            end = size if newline < 0 else newline + 1
            if self._seeking:
                match = _FIELD.search(data, pos, end)
                if match is not None:
                    out += (data[pos : match.start()], self._field)
                    pos, self._seeking = match.end(), False
                    continue
                if newline < 0 and size - pos <= _MAX_HELD_BYTES:
                    self._held = data[pos:]
                    break
            out.append(data[pos:end])
            pos, self._seeking = end, newline >= 0
        return b"".join(out)

    def flush(self) -> bytes:
        """What is still held: the stream ended (or broke) inside a line."""
        held, self._held = self._held, b""
        return held


def stream_renamer(content_type: str, public: str, upstream: str | None) -> StreamRenamer | None:
    """A renamer for an SSE stream from a backend asked for another model; else None."""
    if upstream == public or not content_type.startswith("text/event-stream"):
        return None
    return StreamRenamer(public)

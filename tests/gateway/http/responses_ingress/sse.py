"""Reading the Responses API's stream events out of a response body, for the tests here."""

from __future__ import annotations

from typing import Any

import orjson

Event = dict[str, Any]


def response_events(body: bytes) -> list[Event]:
    """Each event's data; checks that the `event:` line names its type and that the
    sequence numbers count up from 0."""
    out: list[Event] = []
    for frame in body.split(b"\n\n"):
        if not frame.strip():
            continue
        kind, data = frame.split(b"\n", 1)
        assert kind.startswith(b"event: "), frame
        payload: Event = orjson.loads(data.removeprefix(b"data: "))
        assert payload["type"] == kind.removeprefix(b"event: ").decode()
        assert payload["sequence_number"] == len(out), "sequence numbers count up from 0"
        out.append(payload)
    return out


def kinds(events: list[Event]) -> list[str]:
    return [event["type"] for event in events]


def streamed_text(events: list[Event]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")

"""Reading the Responses API's stream events out of a response body, for the tests here."""

from __future__ import annotations

from typing import Any

from tests.gateway.http.sse_events import sse_events

Event = dict[str, Any]


def response_events(body: bytes) -> list[Event]:
    """Each event's data; checks that the sequence numbers count up from 0."""
    events = sse_events(body)
    for position, event in enumerate(events):
        assert event["sequence_number"] == position, "sequence numbers count up from 0"
    return events


def kinds(events: list[Event]) -> list[str]:
    return [event["type"] for event in events]


def streamed_text(events: list[Event]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")

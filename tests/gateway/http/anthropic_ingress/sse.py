"""Reading Anthropic's stream events out of a response body, for the tests here."""

from __future__ import annotations

from typing import Any

from tests.gateway.http.sse_events import sse_events

Event = tuple[str, dict[str, Any]]


def anthropic_events(body: bytes) -> list[Event]:
    """Each event's type with its data."""
    return [(payload["type"], payload) for payload in sse_events(body)]


def streamed_text(events: list[Event]) -> str:
    return "".join(
        e["delta"]["text"] for k, e in events if k == "content_block_delta" and "text" in e["delta"]
    )

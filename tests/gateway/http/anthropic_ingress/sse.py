"""Reading Anthropic's stream events out of a response body, for the tests here."""

from __future__ import annotations

from typing import Any

import orjson

Event = tuple[str, dict[str, Any]]


def anthropic_events(body: bytes) -> list[Event]:
    """Each `event:` with its data; checks that the data names the same type."""
    out: list[Event] = []
    for frame in body.split(b"\n\n"):
        if not frame.strip():
            continue
        kind, data = frame.split(b"\n", 1)
        assert kind.startswith(b"event: "), frame
        payload: dict[str, Any] = orjson.loads(data.removeprefix(b"data: "))
        assert payload["type"] == kind.removeprefix(b"event: ").decode()
        out.append((payload["type"], payload))
    return out


def streamed_text(events: list[Event]) -> str:
    return "".join(
        e["delta"]["text"] for k, e in events if k == "content_block_delta" and "text" in e["delta"]
    )

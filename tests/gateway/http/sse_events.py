"""Reading a translated stream's named SSE events out of a response body, for the tests of
the translating ingresses."""

from __future__ import annotations

from typing import Any

import orjson


def sse_events(body: bytes) -> list[dict[str, Any]]:
    """Each event's data, in order; checks that each is an `event:` line naming the type its
    `data:` line repeats."""
    out: list[dict[str, Any]] = []
    for frame in body.split(b"\n\n"):
        if not frame.strip():
            continue
        kind, data = frame.split(b"\n", 1)
        assert kind.startswith(b"event: ") and data.startswith(b"data: "), frame
        payload: dict[str, Any] = orjson.loads(data.removeprefix(b"data: "))
        assert payload["type"] == kind.removeprefix(b"event: ").decode()
        out.append(payload)
    return out

"""Gemini's wire for the scripted upstream (tests/providers/fake_upstream.py): its SSE framing."""

from __future__ import annotations

from typing import Any

import orjson


def sse(*events: dict[str, Any]) -> list[bytes]:
    """Gemini's framing: `data: {json}` and a CRLF blank line after each event."""
    return [b"data: " + orjson.dumps(event) + b"\r\n\r\n" for event in events]

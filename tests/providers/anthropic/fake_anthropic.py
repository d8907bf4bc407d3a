"""A fake Anthropic Messages API: the scripted upstream (tests/providers/fake_upstream.py)
under `/v1`, answering `GET /v1/models` itself, and Anthropic's SSE framing.

Streams are played as scripted, with no gap of their own between pieces: a test that
wants events split across reads the way a real network splits them says so with
`split_each` and `Pause`s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from tests.providers.fake_upstream import Reply, ScriptedServer, Seen


def sse(*events: dict[str, Any]) -> list[bytes]:
    """Events as Anthropic sends them: an `event:` line, a `data:` line, a blank line."""
    return [
        b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"
        for event in events
    ]


def split_each(pieces: Sequence[bytes], at: int = 7) -> list[bytes]:
    """Every piece cut in two `at` bytes in: events arrive across reads."""
    return [half for piece in pieces for half in (piece[:at], piece[at:]) if half]


class FakeAnthropic(ScriptedServer):
    def __init__(self) -> None:
        super().__init__()
        self.models_status = 200

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def next_reply(self, seen: Seen) -> Reply:
        if (seen.method, seen.path) != ("GET", "/v1/models"):
            return super().next_reply(seen)
        body = {"data": [{"type": "model", "id": "claude-test"}], "has_more": True}
        return Reply(self.models_status, orjson.dumps(body))

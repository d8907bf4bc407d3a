"""A client's own `cache_control` marks beyond the Messages API's 4 are refused before the
request is sent, in the adapter's words (a 400, not the upstream's)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.anthropic.chat_request import UntranslatableRequest
from providers.anthropic.request_translation import to_messages_request

EPHEMERAL = {"type": "ephemeral"}


def marked_parts(count: int) -> list[dict[str, Any]]:
    return [{"type": "text", "text": f"part {i}", "cache_control": EPHEMERAL} for i in range(count)]


def test_four_marks_pass_five_are_refused() -> None:
    four = {"model": "m", "messages": [{"role": "user", "content": marked_parts(4)}]}
    body = to_messages_request(orjson.dumps(four), stream=False).body
    assert sum("cache_control" in b for b in body["messages"][0]["content"]) == 4
    five = {"model": "m", "messages": [{"role": "user", "content": marked_parts(5)}]}
    with pytest.raises(UntranslatableRequest) as refused:
        to_messages_request(orjson.dumps(five), stream=False)
    assert refused.value.message == (
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )
    assert refused.value.param == "cache_control"

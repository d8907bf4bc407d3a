"""A Messages request that only Anthropic's API can serve — a `document` block, a server
tool — goes to a backend of that API as it came; a backend of another API is skipped
for it (the next candidate is tried), and a request that no candidate can serve is
refused with a 400 that names the part at fault."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from emulator.settings import Faults
from tests.conftest import RunningGateway
from tests.integration.mixed_fleet import CLAUDE, CLOUD, GEMINI, HEADER, LOCAL, ROUTE, Fleet

DOCUMENT: dict[str, Any] = {
    "type": "document",
    "source": {"type": "text", "media_type": "text/plain", "data": "The lease ends in May."},
    "cache_control": {"type": "ephemeral"},
}
ASK: dict[str, Any] = {
    "model": ROUTE,
    "max_tokens": 16,
    "messages": [
        {"role": "user", "content": [DOCUMENT, {"type": "text", "text": "When does it end?"}]}
    ],
    "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 1}],
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_only_the_anthropic_backend_serves_it(
    claude_sdk: anthropic.AsyncAnthropic, gw: RunningGateway, fleet: Fleet, stream: bool
) -> None:
    # Either cloud may serve by its tags; only the Anthropic one speaks the client's API.
    options = {**ASK, "extra_headers": {HEADER: CLOUD}}
    for _ in range(4):  # whichever the profile ranks first, Gemini is skipped
        if stream:
            async with claude_sdk.messages.stream(**options) as events:
                answer = await events.get_final_message()
        else:
            answer = await claude_sdk.messages.create(**options)
        assert answer.model == ROUTE and answer.content
    engines = fleet.engines
    assert engines[CLAUDE.name].runtime.stats.completed == 4
    assert engines[GEMINI.name].runtime.stats.completed == 0


async def test_a_route_without_such_a_backend_refuses_it_naming_the_part(
    claude_sdk: anthropic.AsyncAnthropic, fleet: Fleet
) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude_sdk.messages.create(**ASK, extra_headers={HEADER: LOCAL.tag})
    message = caught.value.message
    assert "tools.0: server tool 'web_search_20250305'" in message, message
    assert "backend local does not" in message
    assert fleet.engines[LOCAL.name].runtime.stats.completed == 0


async def test_count_tokens_counts_what_it_can_read(claude_sdk: anthropic.AsyncAnthropic) -> None:
    counted = await claude_sdk.messages.count_tokens(
        model=ROUTE, messages=ASK["messages"], tools=ASK["tools"]
    )
    assert counted.input_tokens > 0


async def test_the_anthropic_backends_own_failure_is_what_the_client_hears(
    claude_sdk: anthropic.AsyncAnthropic, fleet: Fleet
) -> None:
    """Skipping a backend that cannot serve is no failure of its own: when the one that
    can fails, the client gets that failure, not the skip."""
    fleet.engines[CLAUDE.name].runtime.faults = Faults(fail_status=503, fail_count=100)
    with pytest.raises(anthropic.APIStatusError) as caught:
        await claude_sdk.messages.create(**ASK, extra_headers={HEADER: CLOUD})
    assert caught.value.status_code != 400, caught.value.message
    assert "does not" not in caught.value.message

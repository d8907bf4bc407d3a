"""The stream faults against each kind of backend the gateway translates (OpenAI-format,
Anthropic's Messages, Gemini's): whichever wire format broke, the client's OpenAI stream
ends with an error event, and the other members are not asked."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.settings import Faults
from tests.conftest import StartEmulator, StartGateway
from tests.faults.rig import openai_error
from tests.integration.mixed_fleet import HEADER, MEMBERS, ROUTE, Member, start_fleet

BY_BACKEND = pytest.mark.parametrize("member", MEMBERS, ids=[m.name for m in MEMBERS])
FAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "cut": ({"cut_stream_after_chunks": 3}, "upstream_protocol_error"),
    "no-done": ({"omit_done": True}, "upstream_protocol_error"),
    "stall": ({"stall_mid_stream_after_chunks": 3, "stall_mid_stream_s": 5.0}, "upstream_timeout"),
}


@BY_BACKEND
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_broken_stream_of_any_kind_ends_with_an_error_event(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
    member: Member,
    fault: str,
) -> None:
    fleet = await start_fleet(
        start_emulator, monkeypatch, timeouts={"first_token_s": 5, "between_chunks_s": 0.3}
    )
    gw = await start_gateway(fleet.config)
    faults, code = FAULTS[fault]
    fleet.engines[member.name].runtime.faults = Faults(**faults)
    body = {
        "model": ROUTE,
        "messages": [{"role": "user", "content": "tell me about the fault suite"}],
        "max_tokens": 12,
        "stream": True,
    }
    response = await gw.client.post("/v1/chat/completions", json=body, headers={HEADER: member.tag})
    assert response.status_code == 200
    assert openai_error(response.content)["code"] == code
    received = {name: e.runtime.stats.received for name, e in fleet.engines.items()}
    assert received == {m.name: int(m is member) for m in MEMBERS}

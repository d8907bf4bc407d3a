"""A cascade through the real gateway in front of emulated engines: the cheap tier's
answer is judged before the client sees it, a failing one escalates, and every attempt
leaves a record that says why."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from gateway.cascade.note import CascadeNote
from gateway.telemetry.record import RequestRecord
from gateway.tenancy.caller import Caller
from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config

QUESTION = [{"role": "user", "content": "Say something about rivers."}]


async def cascade_gateway(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    *,
    small_faults: dict[str, Any] | None = None,
    strong_faults: dict[str, Any] | None = None,
    streaming: dict[str, Any] | None = None,
    checks: list[Any] | None = None,
    start: dict[str, Any] | None = None,
    small_token_delay_ms: float = 0.0,
) -> RunningGateway:
    small = await start_emulator(faults=small_faults or {}, token_delay_ms=small_token_delay_ms)
    strong = await start_emulator(faults=strong_faults or {})
    config = make_config({"small": small.base_url, "strong": strong.base_url})
    config["routes"] = [
        {"name": "cheap", "model": "emulated-model", "backends": ["small"]},
        {"name": "best", "model": "emulated-model", "backends": ["strong"]},
    ]
    config["cascades"] = [
        {
            "name": "auto",
            "tiers": ["cheap", "best"],
            "checks": checks or ["empty", "loop", "response_format", "tool_calls"],
            "streaming": streaming or {},
            "start": start or {"learned": False},
        }
    ]
    return await start_gateway(config)


def captured(gw: RunningGateway) -> list[RequestRecord]:
    """Every record the gateway emits from now on, in order."""
    pipe = gw.gateway.telemetry.pipe
    seen: list[RequestRecord] = []
    emit = pipe.emit

    def keep(record: Any) -> None:
        if isinstance(record, RequestRecord):
            seen.append(record)
        emit(record)

    pipe.emit = keep  # type: ignore[method-assign]
    return seen


async def settled() -> None:
    """A stream's record is emitted when the response closes, just after its last byte."""
    for _ in range(20):
        await asyncio.sleep(0.01)


def notes(seen: list[RequestRecord]) -> list[CascadeNote]:
    found = [record.cascade for record in seen]
    assert all(note is not None for note in found)
    return [note for note in found if note is not None]


def sse_events(body: bytes) -> list[dict[str, Any]]:
    lines = [line[6:] for line in body.split(b"\n") if line.startswith(b"data: {")]
    return [orjson.loads(line) for line in lines]


def streamed_text(body: bytes) -> str:
    return "".join(
        event["choices"][0]["delta"].get("content") or ""
        for event in sse_events(body)
        if event.get("choices")
    )


async def test_a_passing_cheap_answer_is_the_clients(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway)
    response = await gw.client.post(
        "/v1/chat/completions", json={"model": "auto", "messages": QUESTION, "max_tokens": 30}
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-switchyard-backend"] == "small"
    assert response.headers["x-switchyard-cascade-tier"] == "cheap"
    assert response.headers["x-switchyard-cascade-checks"] == "passed"
    assert "x-switchyard-cascade-escalated" not in response.headers
    assert response.json()["model"] == "auto"


async def test_a_looping_cheap_answer_escalates_with_its_reason(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway, small_faults={"loop_rate": 1.0})
    response = await gw.client.post(
        "/v1/chat/completions", json={"model": "auto", "messages": QUESTION, "max_tokens": 120}
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-switchyard-backend"] == "strong"
    assert response.headers["x-switchyard-cascade-tier"] == "best"
    assert response.headers["x-switchyard-cascade-checks"] == "passed"
    assert response.headers["x-switchyard-cascade-escalated"] == "cheap=loop"


async def test_each_attempt_is_recorded_with_its_tier_and_failed_checks(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway, small_faults={"loop_rate": 1.0})
    seen = captured(gw)
    response = await gw.client.post(
        "/v1/chat/completions", json={"model": "auto", "messages": QUESTION, "max_tokens": 120}
    )
    assert response.status_code == 200
    first, final = notes(seen)
    assert (first.tier_route, first.outcome, first.attempt) == ("cheap", "escalated", 1)
    assert [f.check for f in first.failures] == ["loop"]
    assert "repeated" in first.failures[0].reason
    assert (final.tier_route, final.outcome, final.attempt) == ("best", "passed", 2)
    assert first.request_id == final.request_id == seen[0].decision.decision.id
    assert [r.backend for r in seen] == ["small", "strong"]
    assert all(r.usage is not None and r.usage.completion_tokens > 0 for r in seen)
    assert response.headers["x-switchyard-decision"] == seen[1].decision.decision.id


async def test_the_last_tier_failing_its_checks_is_marked_not_silent(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    loops = {"loop_rate": 1.0}
    gw = await cascade_gateway(
        start_emulator, start_gateway, small_faults=loops, strong_faults=loops
    )
    seen = captured(gw)
    response = await gw.client.post(
        "/v1/chat/completions", json={"model": "auto", "messages": QUESTION, "max_tokens": 120}
    )
    assert response.status_code == 200
    assert response.headers["x-switchyard-cascade-tier"] == "best"
    assert response.headers["x-switchyard-cascade-checks"] == "failed: loop"
    assert [n.outcome for n in notes(seen)] == ["escalated", "failed"]


async def test_a_held_stream_that_fails_escalates_before_the_first_byte(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway, small_faults={"loop_rate": 1.0})
    seen = captured(gw)
    body = {"model": "auto", "messages": QUESTION, "max_tokens": 120, "stream": True}
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200
    assert response.headers["x-switchyard-cascade-tier"] == "best"
    assert response.headers["x-switchyard-cascade-escalated"] == "cheap=loop"
    events = sse_events(response.content)
    assert events and all(e["model"] == "auto" for e in events)
    assert response.content.rstrip().endswith(b"data: [DONE]")
    assert len(streamed_text(response.content).split()) > 10
    await settled()
    assert [n.outcome for n in notes(seen)] == ["escalated", "passed"]


async def test_a_held_stream_that_passes_is_relayed_whole(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway)
    body = {"model": "auto", "messages": QUESTION, "max_tokens": 40, "stream": True}
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200
    assert response.headers["x-switchyard-cascade-tier"] == "cheap"
    assert response.headers["x-switchyard-cascade-checks"] == "passed"
    assert len(streamed_text(response.content).split()) == 40
    assert response.content.rstrip().endswith(b"data: [DONE]")


async def test_a_stream_longer_than_its_hold_commits_and_is_judged_after(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(
        start_emulator, start_gateway, streaming={"hold_tokens": 5}, checks=["loop", "empty"]
    )
    seen = captured(gw)
    body = {"model": "auto", "messages": QUESTION, "max_tokens": 60, "stream": True}
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.headers["x-switchyard-cascade-tier"] == "cheap"
    assert response.headers["x-switchyard-cascade-checks"] == "committed"
    assert len(streamed_text(response.content).split()) == 60
    await settled()
    (note,) = notes(seen)
    assert note.outcome == "committed" and note.failures == ()


async def test_commit_mode_escalates_only_before_the_first_content(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(
        start_emulator,
        start_gateway,
        small_faults={"loop_rate": 1.0},
        streaming={"mode": "commit"},
    )
    seen = captured(gw)
    body = {"model": "auto", "messages": QUESTION, "max_tokens": 120, "stream": True}
    response = await gw.client.post("/v1/chat/completions", json=body)
    # Committed at the first token: the loop is found only once the stream has ended.
    assert response.headers["x-switchyard-cascade-tier"] == "cheap"
    assert response.headers["x-switchyard-cascade-checks"] == "committed"
    await settled()
    (note,) = notes(seen)
    assert note.outcome == "committed"
    assert [f.check for f in note.failures] == ["loop"]


async def test_a_tier_that_fails_before_answering_escalates(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(
        start_emulator, start_gateway, small_faults={"fail_status": 500, "fail_count": 100}
    )
    seen = captured(gw)
    response = await gw.client.post(
        "/v1/chat/completions", json={"model": "auto", "messages": QUESTION, "max_tokens": 10}
    )
    assert response.status_code == 200
    assert response.headers["x-switchyard-cascade-tier"] == "best"
    assert response.headers["x-switchyard-cascade-escalated"].startswith("cheap=error")
    first, final = notes(seen)
    assert first.outcome == "escalated" and first.failures[0].check == "error"
    assert final.outcome == "passed"


async def test_the_anthropic_messages_api_reaches_a_cascade(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway, small_faults={"loop_rate": 1.0})
    body = {"model": "auto", "max_tokens": 120, "messages": QUESTION}
    response = await gw.client.post(
        "/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"}
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["type"] == "message" and answer["content"][0]["type"] == "text"
    assert response.headers["x-switchyard-cascade-escalated"] == "cheap=loop"


async def test_a_messages_request_only_anthropic_can_serve_is_refused_by_a_cascade(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    """Its tiers get translations, which would drop the document: a 400, not a silent loss."""
    gw = await cascade_gateway(start_emulator, start_gateway)
    document = {"type": "document", "source": {"type": "text", "media_type": "t", "data": "x"}}
    body = {"model": "auto", "max_tokens": 8, "messages": [{"role": "user", "content": [document]}]}
    response = await gw.client.post(
        "/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"}
    )
    assert response.status_code == 400, response.text
    assert "'document' blocks are served only" in response.json()["error"]["message"]


async def test_a_cascade_answers_chat_only(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway)
    response = await gw.client.post("/v1/embeddings", json={"model": "auto", "input": "x"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "model"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_bad_tool_calls_escalate(
    start_emulator: StartEmulator, start_gateway: StartGateway, stream: bool
) -> None:
    gw = await cascade_gateway(
        start_emulator, start_gateway, small_faults={"malformed_tool_call_rate": 1.0}
    )
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
    body = {
        "model": "auto",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [tool],
        "tool_choice": "required",
        "max_tokens": 60,
        "stream": stream,
    }
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["x-switchyard-cascade-escalated"] == "cheap=tool_calls"
    assert response.headers["x-switchyard-cascade-checks"] == "passed"


async def metric(gw: RunningGateway, line_start: str) -> float:
    """A sample's value once the telemetry thread has counted it (0 until then)."""
    for _ in range(100):
        text = (await gw.client.get("/metrics")).text
        for line in text.splitlines():
            if line.startswith(line_start):
                return float(line.rsplit(" ", 1)[1])
        await asyncio.sleep(0.02)
    return 0.0


async def test_metrics_count_attempts_checks_and_costs(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway, small_faults={"loop_rate": 1.0})
    for _ in range(2):
        response = await gw.client.post(
            "/v1/chat/completions",
            json={"model": "auto", "messages": QUESTION, "max_tokens": 120},
        )
        assert response.status_code == 200
    attempts = 'switchyard_cascade_attempts_total{cascade="auto",outcome="escalated",tier="cheap"}'
    assert await metric(gw, attempts) == 2.0
    checks = 'switchyard_cascade_check_failures_total{cascade="auto",check="loop",tier="cheap"}'
    assert await metric(gw, checks) == 2.0
    passed = 'switchyard_cascade_attempts_total{cascade="auto",outcome="passed",tier="best"}'
    assert await metric(gw, passed) == 2.0
    assert await metric(gw, 'switchyard_cascade_passing_answers_total{cascade="auto"}') == 2.0


async def test_a_kind_that_keeps_failing_the_cheap_tier_starts_above_it(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(
        start_emulator,
        start_gateway,
        small_faults={"loop_rate": 1.0},
        # Decayed: three attempts a moment apart weigh a little under 3.
        start={"min_samples": 2.9, "failure_rate": 0.8, "explore": 0.0},
    )
    seen = captured(gw)
    body = {"model": "auto", "messages": QUESTION, "max_tokens": 120}
    tiers_tried = []
    for _ in range(6):
        response = await gw.client.post("/v1/chat/completions", json=body)
        assert response.headers["x-switchyard-cascade-tier"] == "best"
        tiers_tried.append(response.headers.get("x-switchyard-cascade-escalated", ""))
    assert tiers_tried == ["cheap=loop"] * 3 + [""] * 3  # three doomed tries, then none
    started = [n for n in notes(seen) if n.attempt == 1]
    assert [n.start_tier for n in started] == [0, 0, 0, 1, 1, 1]
    assert "'cheap' skipped: this kind failed its checks there 3.0 of 3.0 times (100%)" in (
        started[3].start_reason
    )
    # Another kind (tools asked) has no evidence against the cheap tier yet.
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    response = await gw.client.post(
        "/v1/chat/completions", json={**body, "tools": [tool], "max_tokens": 20}
    )
    assert response.status_code == 200
    assert [n.start_tier for n in notes(seen) if n.attempt == 1][-1] == 0


@pytest.mark.parametrize(("min_mean", "escalated"), [(-50.0, False), (-0.0001, True)])
async def test_the_logprob_check_reads_log_probabilities_the_gateway_asked_for(
    start_emulator: StartEmulator, start_gateway: StartGateway, min_mean: float, escalated: bool
) -> None:
    gw = await cascade_gateway(
        start_emulator,
        start_gateway,
        checks=[{"check": "logprob", "params": {"min_mean": min_mean}}],
    )
    seen = captured(gw)
    response = await gw.client.post(
        "/v1/chat/completions", json={"model": "auto", "messages": QUESTION, "max_tokens": 30}
    )
    assert response.status_code == 200
    first = notes(seen)[0]
    assert first.mean_logprob is not None and first.mean_logprob < 0
    if escalated:
        assert response.headers["x-switchyard-cascade-escalated"] == "cheap=logprob"
        assert "low confidence: mean token logprob" in first.failures[0].reason
    else:
        assert response.headers["x-switchyard-cascade-tier"] == "cheap"
        # Asked for by the gateway, not the client: not in the client's answer.
        assert response.json()["choices"][0]["logprobs"] is None


async def test_a_key_that_may_not_use_every_tier_is_refused_before_any_is_tried(
    start_emulator: StartEmulator, start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway)
    only_cheap = Caller(key_id="key_cheap", kind="virtual", routes=frozenset({"cheap"}))
    monkeypatch.setattr(gw.gateway, "authorize", lambda authorization: only_cheap)
    seen = captured(gw)
    response = await gw.client.post(
        "/v1/chat/completions", json={"model": "auto", "messages": QUESTION, "max_tokens": 10}
    )
    assert response.status_code == 403
    assert "its tier 'best'" in response.json()["error"]["message"]
    await settled()
    assert [r for r in seen if r.backend is not None] == []  # no tier was tried


async def test_the_last_tier_breaking_while_held_ends_with_an_error_event_not_a_500(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(
        start_emulator,
        start_gateway,
        small_faults={"loop_rate": 1.0},
        strong_faults={"cut_stream_after_chunks": 3},
    )
    seen = captured(gw)
    body = {"model": "auto", "messages": QUESTION, "max_tokens": 120, "stream": True}
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200
    assert response.headers["x-switchyard-cascade-checks"].startswith("failed: error")
    assert response.content.rstrip().split(b"\n")[-1].startswith(b'data: {"error"')
    await settled()
    assert [n.outcome for n in notes(seen)] == ["escalated", "failed"]


async def test_an_error_event_in_a_held_answer_escalates(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(
        start_emulator, start_gateway, small_faults={"error_event_after_chunks": 3}
    )
    seen = captured(gw)
    body = {"model": "auto", "messages": QUESTION, "max_tokens": 40, "stream": True}
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.headers["x-switchyard-cascade-tier"] == "best"
    assert response.headers["x-switchyard-cascade-escalated"] == "cheap=error"
    await settled()
    first = notes(seen)[0]
    assert first.outcome == "escalated" and first.failures[0].check == "error"


async def test_a_client_that_leaves_during_the_hold_is_not_a_passing_answer(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway, small_token_delay_ms=50.0)
    seen = captured(gw)
    body = {"model": "auto", "messages": QUESTION, "max_tokens": 200, "stream": True}
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.5):
            await gw.client.post("/v1/chat/completions", json=body)
    for _ in range(100):
        await asyncio.sleep(0.02)
        if seen:
            break
    (note,) = notes(seen)
    assert note.outcome == "abandoned" and seen[0].status == 499
    assert gw.gateway.state.in_flight("small") == 0


async def test_a_held_stream_times_the_backends_decode_from_its_first_chunk(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway, small_token_delay_ms=10.0)
    seen = captured(gw)
    body = {"model": "auto", "messages": QUESTION, "max_tokens": 30, "stream": True}
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.headers["x-switchyard-cascade-checks"] == "passed"
    await settled()
    (record,) = seen
    # Held whole, the client's first byte came with its last: the backend decoded for
    # ~30 x 10 ms all the same.
    assert record.decode_s is not None and record.decode_s > 0.15


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_the_responses_api_reaches_a_cascade(
    start_emulator: StartEmulator, start_gateway: StartGateway, stream: bool
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway, small_faults={"loop_rate": 1.0})
    body = {"model": "auto", "input": "Say something about rivers.", "max_output_tokens": 120}
    response = await gw.client.post("/v1/responses", json={**body, "stream": stream})
    assert response.status_code == 200, response.text
    assert response.headers["x-switchyard-cascade-escalated"] == "cheap=loop"
    if stream:
        assert b"event: response.output_text.delta" in response.content
        assert response.content.rstrip().split(b"\n")[-1].startswith(b"data: {")
        assert b'"type":"response.incomplete"' in response.content or (
            b'"type":"response.completed"' in response.content
        )
    else:
        answer = response.json()
        assert answer["object"] == "response" and answer["model"] == "auto"
        assert answer["output"][0]["content"][0]["text"]


async def test_a_streamed_anthropic_request_to_a_cascade_gets_anthropic_events(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await cascade_gateway(start_emulator, start_gateway, small_faults={"loop_rate": 1.0})
    body = {"model": "auto", "max_tokens": 120, "messages": QUESTION, "stream": True}
    response = await gw.client.post(
        "/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"}
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-switchyard-cascade-escalated"] == "cheap=loop"
    assert b"event: message_start" in response.content
    assert b"event: message_stop" in response.content

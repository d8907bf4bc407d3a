"""The access log: one short line per request by default, the whole record when asked, or
nothing; written by the telemetry thread."""

from __future__ import annotations

import io
import logging
import time
from dataclasses import replace
from typing import Any

import orjson
import pytest

from gateway.process.terminal import BatchedStreamHandler, SecondsFormatter
from gateway.telemetry.access_log import (
    AccessLog,
    concise_line,
    json_line,
    refused_json,
    refused_line,
    suppressed_json,
    suppressed_line,
)
from gateway.telemetry.record import RequestRecord
from gateway.telemetry.refusals import Refusal, Suppressed
from providers.usage import Usage
from tests.conftest import StartEmulator, StartGateway, make_config
from tests.gateway.telemetry.builders import record
from tests.gateway.telemetry.test_metrics_endpoint import drained

DECISION = "d" * 16
CHAT = {"model": "default", "messages": [{"role": "user", "content": "log me"}], "max_tokens": 3}


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        (
            record(e2e_s=0.4124, usage=Usage(4102, 16, 3968)),
            "default -> a 200 412ms cached 3,968/4,102 tok",
        ),
        # A backend that does not report what it had cached: only the prompt's size.
        (record(usage=Usage(12, 4, None)), "default -> a 200 500ms prompt 12 tok"),
        (
            record(
                stream=True,
                e2e_s=1.25,
                usage=Usage(10, 2, 0),
                attempts=(("b", "upstream_unavailable", 5.0), ("a", "ok", 100.0)),
            ),
            "default -> a 200 1250ms stream cached 0/10 tok 1 retry",
        ),
        (
            record(
                backend=None,
                status=502,
                error="upstream_unavailable",
                e2e_s=0.0304,
                attempts=(("a", "upstream_unavailable", 5.0), ("b", "upstream_timeout", 9.0)),
            ),
            "default -> (none) 502 30ms no usage 1 retry error upstream_unavailable",
        ),
        (
            record(status=499, error="client_disconnected", e2e_s=2.0),
            "default -> a 499 2000ms no usage error client_disconnected",
        ),
    ],
    ids=["cached", "no-cached-count", "stream-retried", "all-failed", "client-gone"],
)
def test_the_concise_line_says_route_backend_status_time_tokens_and_decision(
    made: RequestRecord, expected: str
) -> None:
    assert concise_line(made) == f"{expected}  decision {DECISION}"


def test_the_json_line_is_the_whole_record_with_its_decision() -> None:
    made = record(e2e_s=0.25, usage=Usage(7, 3, 0))
    made.chunks = 4
    line = orjson.loads(json_line(made))
    assert line == {
        "event": "request",
        "endpoint": "chat.completions",
        "status": 200,
        "backend": "a",
        "duration_ms": 250.0,
        "error": None,
        "key_id": None,
        "team": None,
        "decision": orjson.loads(made.decision.rendered()),
        "chunks": 4,
    }
    assert line["decision"]["id"] == DECISION
    assert [c["backend"] for c in line["decision"]["candidates"]] == ["a"]


@pytest.mark.parametrize("mode", ["line", "json"])
def test_the_sink_writes_one_info_line_per_record_unless_info_is_off(
    mode: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sink = AccessLog(mode)
    made = record(usage=Usage(5, 1, 2))
    with caplog.at_level(logging.INFO, logger="switchyard.access"):
        sink.consume(made)
    render = concise_line if mode == "line" else json_line
    assert [r.getMessage() for r in caplog.records] == [render(made)]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="switchyard.access"):
        sink.consume(made)
    assert caplog.records == []
    assert sink.written == 1


@pytest.mark.parametrize("mode", ["off", "line", "json"])
async def test_a_gateway_logs_its_requests_as_configured(
    mode: str,
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = await start_emulator(models=["emulated-model"])
    config = make_config({"a": engine.base_url}, telemetry={"access_log": mode})
    gw = await start_gateway(config)
    with caplog.at_level(logging.INFO, logger="switchyard.access"):
        reply = await gw.client.post("/v1/chat/completions", json=CHAT)
        await drained(gw, 1)
    decision = reply.headers["x-switchyard-decision"]
    lines = [r.getMessage() for r in caplog.records if r.name == "switchyard.access"]
    if mode == "off":
        assert lines == []
    elif mode == "line":
        assert len(lines) == 1
        assert lines[0].startswith("default -> a 200 ")
        assert lines[0].endswith(f" tok  decision {decision}")
    else:
        (line,) = lines
        logged = orjson.loads(line)
        assert logged["status"] == 200 and logged["backend"] == "a"
        assert logged["decision"]["id"] == decision
        assert logged["decision"]["candidates"]


def test_a_batch_is_written_in_order_one_line_per_request_each_at_its_finish_time() -> None:
    stream = io.StringIO()
    handler = BatchedStreamHandler(stream)
    handler.setFormatter(SecondsFormatter("%(asctime)s %(message)s", "%H:%M:%S"))
    access = logging.getLogger("switchyard.access")
    saved = (access.handlers[:], access.propagate, access.level)
    access.handlers, access.propagate, access.level = [handler], False, logging.INFO
    try:
        sink = AccessLog("line")
        made = [record(at=at, e2e_s=0.5, usage=Usage(9, 1, 0)) for at in (7200.0, 7210.0, 7199.0)]
        for one in made:
            sink.consume(one)
        assert stream.getvalue() == ""  # held until the batch ends
        sink.flush()
    finally:
        access.handlers, access.propagate, access.level = saved
    clock = [time.strftime("%H:%M:%S", time.localtime(one.at + 0.5)) for one in made]
    assert stream.getvalue().splitlines() == [
        f"{at} {concise_line(one)}" for at, one in zip(clock, made, strict=True)
    ]
    assert sink.written == 3


REFUSAL = Refusal(
    at=7200.0,
    status=429,
    code="rate_limit_exceeded",
    reason="Rate limit reached for requests per minute",
    endpoint="chat.completions",
    route="default",
    key_id="key_ab12",
    team=None,
    e2e_s=0.0016,
    logged=True,
    sampled=False,
)


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        (
            REFUSAL,
            "default -> (refused) 429 2ms error rate_limit_exceeded  key key_ab12  "
            "reason: Rate limit reached for requests per minute",
        ),
        (
            replace(REFUSAL, status=401, code="invalid_api_key", route=None, key_id=None,
                    reason="missing or invalid API key for this gateway"),
            "(no route) -> (refused) 401 2ms error invalid_api_key  "
            "reason: missing or invalid API key for this gateway",
        ),
    ],
    ids=["known-route-and-key", "neither-known"],
)  # fmt: skip
def test_a_refused_line_says_route_status_code_key_and_reason(made: Refusal, expected: str) -> None:
    assert refused_line(made) == expected


def test_a_refusal_after_the_decision_has_the_refused_shape_and_its_decision() -> None:
    made = record(backend=None, status=429, error="queue_full", e2e_s=0.08)
    made.key_id, made.reason = "key_ab12", "refused by flow control: its queue is full"
    assert concise_line(made) == (
        "default -> (refused) 429 80ms error queue_full  key key_ab12  "
        f"reason: refused by flow control: its queue is full  decision {DECISION}"
    )
    assert orjson.loads(json_line(made))["reason"] == made.reason


def test_the_json_refusal_and_summary_lines() -> None:
    assert orjson.loads(refused_json(REFUSAL)) == {
        "event": "refused",
        "endpoint": "chat.completions",
        "status": 429,
        "route": "default",
        "duration_ms": 1.6,
        "error": "rate_limit_exceeded",
        "key_id": "key_ab12",
        "team": None,
        "reason": "Rate limit reached for requests per minute",
    }
    summary = Suppressed(7260.0, 429, "rate_limit_exceeded", 940, 59.6)
    assert orjson.loads(suppressed_json(summary)) == {
        "event": "suppressed",
        "status": 429,
        "error": "rate_limit_exceeded",
        "lines": 940,
        "over_s": 59.6,
    }
    assert suppressed_line(summary) == (
        "(refused) 429 rate_limit_exceeded: 940 similar lines suppressed over 60s"
    )


@pytest.mark.parametrize("mode", ["line", "json"])
def test_the_sink_writes_what_the_buckets_let_through(
    mode: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sink = AccessLog(mode)
    held_back = record(backend=None, status=429, error="queue_full")
    held_back.reason, held_back.logged = "queue full", False
    summary = Suppressed(7260.0, 429, "rate_limit_exceeded", 2, 1.0)
    with caplog.at_level(logging.INFO, logger="switchyard.access"):
        sink.refused(REFUSAL)
        sink.refused(replace(REFUSAL, logged=False, sampled=True))  # a record, no line
        sink.consume(held_back)
        sink.refused(summary)
    render = (refused_line, suppressed_line) if mode == "line" else (refused_json, suppressed_json)
    assert [r.getMessage() for r in caplog.records] == [render[0](REFUSAL), render[1](summary)]
    assert [r.created for r in caplog.records] == [7200.0016, 7260.0]
    assert sink.written == 2

"""The access log: one short line per request by default, the whole record when asked, or
nothing; written by the telemetry thread."""

from __future__ import annotations

import io
import logging
import time
from typing import Any

import orjson
import pytest

from gateway.process.terminal import BatchedStreamHandler, SecondsFormatter
from gateway.telemetry.access_log import AccessLog, concise_line, json_line
from gateway.telemetry.record import RequestRecord
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

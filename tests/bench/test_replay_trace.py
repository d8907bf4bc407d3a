"""Trace loading: validation with line numbers, --limit, request bodies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.replay.trace import TraceError, load_trace
from tests.bench.synthetic import agent_trace, request, segment, write_trace


def test_loads_requests_segments_and_children(tmp_path: Path) -> None:
    trace = load_trace(agent_trace(tmp_path / "t.jsonl"))
    assert [r.id for r in trace.requests][:4] == ["r1", "r2", "r3", "r4"]
    assert len(trace.requests) == 10
    assert trace.meta["name"] == "synthetic"
    assert [c.id for c in trace.children["r3"]] == ["sub0", "sub1", "sub2", "sub3"]
    r3 = trace.requests[2]
    assert (r3.parent, r3.after_s, r3.start_s, r3.line) == ("r1", 0.1, None, r3.line)
    assert trace.requests[0].start_s == 0.0


def test_body_is_the_openai_request_with_concatenated_segments(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path / "t.jsonl",
        [
            segment("a", 'quote " and \\ and é and \n'),
            segment("b", "second"),
            segment("tools", '[{"type": "function", "function": {"name": "f"}}]'),
            request("r1", ["a", "b"], ["b"], max_tokens=7, tools="tools", start=0),
        ],
    )
    trace = load_trace(path)
    body = orjson.loads(trace.body(trace.requests[0], "route-x"))
    assert body["model"] == "route-x"
    assert body["messages"] == [
        {"role": "user", "content": 'quote " and \\ and é and \nsecond'},
        {"role": "assistant", "content": "second"},
    ]
    assert body["max_tokens"] == 7
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [{"type": "function", "function": {"name": "f"}}]


def test_non_streamed_request_has_no_stream_options(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path / "t.jsonl", [segment("a", "x"), request("r1", ["a"], start=0, stream=False)]
    )
    trace = load_trace(path)
    body = orjson.loads(trace.body(trace.requests[0], "m"))
    assert body["stream"] is False and "stream_options" not in body and "tools" not in body


def test_limit_keeps_the_first_requests_and_stops_reading(tmp_path: Path) -> None:
    path = agent_trace(tmp_path / "t.jsonl")
    with path.open("a") as out:
        out.write("this line is never read\n")
    trace = load_trace(path, limit=3)
    assert [r.id for r in trace.requests] == ["r1", "r2", "r3"]


BROKEN: list[tuple[Any, str]] = [
    ("{not json", "not valid JSON"),
    ('["a list"]', "expected a JSON object"),
    ({"kind": "other"}, "unknown kind"),
    ({"kind": "segment", "id": "s", "text": 3}, "'text' must be a string"),
    ({"kind": "segment", "id": "a", "text": "dup"}, "duplicate id"),
    (request("x", ["missing"], start=0), "unknown segment(s) 'missing'"),
    (request("x", ["a"], parent="nobody", after=1), "must name an earlier request"),
    (request("x", ["a"], start=0, parent="r0", after=1), "both 'start' and"),
    (request("x", ["a"], start=-1), "'start' must be a finite number"),
    (request("x", ["a"], max_tokens=0, start=0), "'max_tokens' must be a positive integer"),
    (request("x", ["a"], tools="a", start=0), "is not JSON"),
    (request("x", ["a"], tools="arr", start=0), "is not a JSON array"),
    ({**request("x", ["a"], start=0), "messages": []}, "'messages' must be a non-empty array"),
    (request("r0", ["a"], start=0), "duplicate id"),
    (request("x", ["a"], start=0, priority=1), "'priority' must be a non-empty string"),
    (request("x", ["a"], start=0, priority=""), "'priority' must be a non-empty string"),
    (request("x", ["a"], start=0, tenant=["t"]), "'tenant' must be a non-empty string"),
    (request("x", ["a"], start=0, tenant="a\nb"), "'tenant' must be printable ASCII"),
    (request("x", ["a"], start=0, priority=" batch"), "'priority' must be printable ASCII"),
    ({"kind": "meta", "burst_start_s": 60}, "'burst_start_s' and 'burst_end_s' must be"),
    ({"kind": "meta", "burst_start_s": 90, "burst_end_s": 60}, "start <= end"),
    ({"kind": "meta", "burst_start_s": "60", "burst_end_s": 120}, "must be numbers >= 0"),
    (request("x", ["a"], start=0, tenant="équipe"), "'tenant' must be printable ASCII"),
]


@pytest.mark.parametrize(("line", "message"), BROKEN)
def test_bad_lines_are_reported_with_their_line_number(
    tmp_path: Path, line: Any, message: str
) -> None:
    head = [segment("a", "text"), segment("arr", '{"an": "object"}'), request("r0", ["a"], start=0)]
    path = write_trace(tmp_path / "t.jsonl", [*head, line])
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    assert len(caught.value.problems) == 1
    problem = caught.value.problems[0]
    assert problem.startswith("line 4: ") and message in problem, problem


def test_priority_and_tenant_are_read_when_present(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path / "t.jsonl",
        [
            segment("a", "x"),
            request("r1", ["a"], start=0, priority="interactive", tenant="acme"),
            request("r2", ["a"], start=0, priority="batch"),
            request("r3", ["a"], start=0, priority=None, tenant=None),
        ],
    )
    labels = [(r.priority, r.tenant) for r in load_trace(path).requests]
    assert labels == [("interactive", "acme"), ("batch", None), (None, None)]


def test_a_burst_window_is_read_from_the_meta_line(tmp_path: Path) -> None:
    meta = {"kind": "meta", "name": "b", "burst_start_s": 60, "burst_end_s": 120.5}
    path = write_trace(
        tmp_path / "t.jsonl", [meta, segment("a", "x"), request("r1", ["a"], start=0)]
    )
    assert load_trace(path).burst_s == (60.0, 120.5)
    assert load_trace(agent_trace(tmp_path / "plain.jsonl")).burst_s is None


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path / "t.jsonl",
        ["{oops", segment("a", "x"), request("r1", ["zzz"], start=0), request("r2", ["a"])],
    )
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    lines = [p.split(":")[0] for p in caught.value.problems]
    assert lines == ["line 1", "line 3", "line 4"]
    assert "3 problem(s)" in str(caught.value)


def test_a_trace_without_requests_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no requests"):
        load_trace(write_trace(tmp_path / "t.jsonl", [segment("a", "x")]))


def test_nominal_start_follows_parents(tmp_path: Path) -> None:
    trace = load_trace(agent_trace(tmp_path / "t.jsonl"))
    due = trace.nominal_start_s()
    assert due["r3"] == pytest.approx(0.1)
    assert due["sub2"] == pytest.approx(0.15)
    assert trace.nominal_span_s() == pytest.approx(0.4)

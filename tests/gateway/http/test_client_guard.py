"""The client bounds without a server: a request's clock (which deadline, which bound) and
the process's guard (the cap, the answers, the counts and the log line)."""

from __future__ import annotations

import logging

import orjson
import pytest

from gateway.config.clients import ClientsConfig
from gateway.config.root import ServerConfig
from gateway.http.client_guard import ClientGuard, Phase, RequestClock
from gateway.telemetry.client_metrics import ConnectionTally
from gateway.telemetry.log_budget import LogBudget

BOUNDS = ClientsConfig(
    header_timeout_s=10, body_timeout_s=5, body_min_bytes_per_s=100, max_connections=2
)


def test_defaults_bound_every_phase_of_reading_a_request() -> None:
    clients = ServerConfig().clients
    assert 10 <= clients.header_timeout_s <= 30
    assert 10 <= clients.body_timeout_s <= 60
    assert clients.body_min_bytes_per_s > 0
    assert clients.max_connections > 1000


def test_the_head_is_due_a_header_timeout_after_it_began() -> None:
    clock = RequestClock(BOUNDS)
    assert clock.head(100.0) == 110.0
    assert clock.overdue(109.9) is None
    assert clock.overdue(110.0) == "header_timeout"


@pytest.mark.parametrize(
    ("reads", "now", "bound"),
    [
        ([], 104.9, None),
        ([], 105.0, "body_timeout"),  # not a byte of the body
        ([(104.0, 1000)], 108.9, None),  # each read buys body_timeout_s more...
        ([(104.0, 1000)], 109.0, "body_timeout"),
        # ...and past the allowance of 5 s each 100 bytes buy a second: 301 bytes, 8.01 s.
        ([(102.0, 100), (104.0, 100), (106.0, 100), (108.0, 1)], 108.0, None),
        ([(102.0, 100), (104.0, 100), (106.0, 100), (108.0, 1)], 108.05, "body_rate"),
        ([(t, 1000) for t in range(101, 160)], 160.0, None),  # fast enough for ever
    ],
)
def test_the_body_is_due_by_the_gap_between_reads_and_by_its_rate(
    reads: list[tuple[float, int]], now: float, bound: str | None
) -> None:
    clock = RequestClock(BOUNDS)
    clock.head(99.0)
    assert clock.body(100.0) == 105.0
    for at, size in reads:
        clock.read(at, size)
    assert clock.overdue(now) == bound


def test_without_a_rate_only_the_gap_between_reads_counts() -> None:
    clock = RequestClock(BOUNDS.model_copy(update={"body_min_bytes_per_s": 0}))
    clock.body(0.0)
    for at in range(4, 400, 4):
        clock.read(float(at), 1)
        assert clock.overdue(at + 4.9) is None


def test_time_the_server_holds_the_reading_does_not_count() -> None:
    clock = RequestClock(BOUNDS)
    clock.body(0.0)
    clock.restart(60.0)  # the app was not reading; the client is not late
    assert clock.overdue(64.0) is None
    assert clock.overdue(65.0) == "body_timeout"


@pytest.mark.parametrize("phase", ["idle", "ended"])
def test_nothing_is_due_when_nothing_is_being_read(phase: str) -> None:
    clock = RequestClock(BOUNDS)
    clock.head(0.0)
    clock.idle() if phase == "idle" else clock.end()
    assert clock.phase is Phase(phase)
    assert clock.deadline() is None
    assert clock.overdue(1e9) is None


def test_the_guard_admits_up_to_its_cap_and_again_once_one_closes() -> None:
    tally = ConnectionTally()
    guard = ClientGuard(BOUNDS, tally)
    assert [guard.admit() for _ in range(3)] == [True, True, False]
    assert tally.open == 2
    guard.release()
    assert guard.admit()
    assert tally.open == 2


@pytest.mark.parametrize(
    ("bound", "status", "code"),
    [
        ("header_timeout", 408, "request_timeout"),
        ("body_timeout", 408, "request_timeout"),
        ("body_rate", 408, "request_timeout"),
        ("max_connections", 503, "too_many_connections"),
    ],
)
def test_each_bound_answers_a_whole_openai_shaped_response_that_closes(
    bound: str, status: int, code: str
) -> None:
    guard = ClientGuard(BOUNDS, ConnectionTally())
    raw = guard.answer(bound, [(b"date", b"Mon, 07 Dec 2026 10:00:00 GMT")])  # type: ignore[arg-type]
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    assert lines[0].startswith(f"HTTP/1.1 {status} ")
    assert headers["connection"] == "close"
    assert headers["date"] == "Mon, 07 Dec 2026 10:00:00 GMT"
    assert int(headers["content-length"]) == len(body)
    assert orjson.loads(body)["error"]["code"] == code
    assert ("retry-after" in headers) is (status == 503)


def test_each_ending_is_counted_and_logged_within_the_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tally = ConnectionTally()
    guard = ClientGuard(BOUNDS, tally, LogBudget(burst=2, every_s=3600.0))
    with caplog.at_level(logging.WARNING, logger="switchyard"):
        for _ in range(5):
            guard.ended("header_timeout", ("127.0.0.1", 4242), "answered")
        guard.ended("body_timeout", None, "after_response")
        guard.idle_closed()
    assert tally.closed == {"header_timeout": 5, "body_timeout": 1, "keep_alive": 1}
    lines = [r.getMessage() for r in caplog.records]
    assert (
        lines
        == [
            "client 127.0.0.1:4242: the request's head did not arrive within 10 s; "
            "answered 408 and closed",
        ]
        * 2
    )

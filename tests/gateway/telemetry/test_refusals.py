"""The gateway's refusals on the event loop: every one counted; lines and records each let
through a token bucket per (status, code), the held-back lines summed up; reasons on one
line and cut."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.telemetry.config import RefusedConfig
from gateway.telemetry.refusals import Refusal, RefusalItem, Refusals, Suppressed


class Rig:
    """`Refusals` on a hand-moved clock, collecting what it hands on."""

    def __init__(self, *, logs: bool = True, samples: bool = True, **config: Any) -> None:
        self.now = 100.0
        self.items: list[RefusalItem] = []
        self.refusals = Refusals(
            RefusedConfig(**config),
            self.items.append,
            logs=logs,
            samples=samples,
            clock=lambda: self.now,
            wall=lambda: 1_000_000.0 + self.now,
        )

    def refuse(self, times: int = 1, status: int = 400, code: str = "invalid_request") -> None:
        for _ in range(times):
            self.refusals.refused(
                status, code, "invalid JSON", endpoint="chat.completions", started=self.now
            )

    def refused(self) -> list[Refusal]:
        return [i for i in self.items if isinstance(i, Refusal)]

    def summaries(self) -> list[Suppressed]:
        return [i for i in self.items if isinstance(i, Suppressed)]


def test_a_flood_is_counted_whole_and_written_within_its_buckets() -> None:
    rig = Rig(log_lines_per_minute=5, records_per_minute=2, summary_every_s=60.0)
    rig.refuse(1_000)
    assert rig.refusals.counts == {(400, "invalid_request"): 1_000}
    refused = rig.refused()
    assert sum(r.logged for r in refused) == 5
    assert sum(r.sampled for r in refused) == 2
    assert len(refused) == 5, "only what a bucket let through crosses to the thread"
    rig.refusals.summarise()
    assert rig.summaries() == [], "not before summary_every_s"
    rig.now += 60.0  # each bucket refilled: 5 lines and 2 records more may go
    rig.refuse(1_000)
    rig.refusals.summarise()
    (summary,) = rig.summaries()
    assert (summary.status, summary.code, summary.lines) == (400, "invalid_request", 1_990)
    assert summary.over_s == 60.0
    assert sum(r.logged for r in rig.refused()) == 10
    assert sum(r.sampled for r in rig.refused()) == 4
    assert rig.refusals.counted("invalid_request") == 2_000


def test_each_status_and_code_has_its_own_buckets() -> None:
    rig = Rig(log_lines_per_minute=1, records_per_minute=1)
    rig.refuse(3, 400, "invalid_request")
    rig.refuse(3, 401, "invalid_api_key")
    rig.refuse(3, 429, "rate_limit_exceeded")
    assert [(r.status, r.code) for r in rig.refused()] == [
        (400, "invalid_request"),
        (401, "invalid_api_key"),
        (429, "rate_limit_exceeded"),
    ]
    rig.refusals.summarise(final=True)
    assert sorted((s.code, s.lines) for s in rig.summaries()) == [
        ("invalid_api_key", 2),
        ("invalid_request", 2),
        ("rate_limit_exceeded", 2),
    ]


def test_a_refusal_carries_what_is_known_of_it() -> None:
    rig = Rig()
    rig.now = 200.0
    rig.refusals.refused(
        429,
        "rate_limit_exceeded",
        "Rate limit reached for requests",
        endpoint="messages",
        started=199.75,
        route="default",
        key_id="key_ab12",
        team="search",
    )
    (refusal,) = rig.refused()
    assert refusal == Refusal(
        at=1_000_199.75,
        status=429,
        code="rate_limit_exceeded",
        reason="Rate limit reached for requests",
        endpoint="messages",
        route="default",
        key_id="key_ab12",
        team="search",
        e2e_s=0.25,
        logged=True,
        sampled=True,
    )


def test_without_an_access_log_or_a_place_to_keep_them_nothing_crosses() -> None:
    rig = Rig(logs=False, samples=False)
    rig.refuse(10)
    rig.refusals.summarise(final=True)
    assert rig.items == []
    assert rig.refusals.counted("invalid_request") == 10


@pytest.mark.parametrize(
    ("log", "records", "logged", "sampled"),
    [(0, 3, 0, 3), (3, 0, 3, 0), (0, 0, 0, 0)],
    ids=["records-only", "lines-only", "neither"],
)
def test_zero_turns_lines_or_records_off(log: int, records: int, logged: int, sampled: int) -> None:
    rig = Rig(log_lines_per_minute=log, records_per_minute=records)
    rig.refuse(10)
    assert sum(r.logged for r in rig.refused()) == logged
    assert sum(r.sampled for r in rig.refused()) == sampled
    rig.refusals.summarise(final=True)
    assert [s.lines for s in rig.summaries()] == [10 - logged]


def test_refusals_after_a_decision_share_the_line_bucket_but_not_the_counts() -> None:
    rig = Rig(log_lines_per_minute=2)
    assert [rig.refusals.line(429, "queue_full") for _ in range(4)] == [True, True, False, False]
    assert rig.refusals.counts == {}  # their records count them
    rig.refusals.summarise(final=True)
    assert [(s.code, s.lines) for s in rig.summaries()] == [("queue_full", 2)]


def test_codes_beyond_the_bound_count_as_other() -> None:
    rig = Rig(max_codes=2)
    for code in ("a", "b", "c", "d"):
        rig.refuse(1, 400, code)
    rig.refuse(1, 401, "e")
    assert rig.refusals.counts == {
        (400, "a"): 1,
        (400, "b"): 1,
        (400, "other"): 2,
        (401, "other"): 1,
    }


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("short", "short"),
        ("line one\nline two\r\n\tthree", "line one line two three"),
        ("x" * 40, "x" * 31 + "…"),
        ("x" * 32, "x" * 32),
    ],
    ids=["short", "control-characters", "cut", "at-the-bound"],
)
def test_a_reason_is_one_line_cut_to_its_bound(message: str, reason: str) -> None:
    assert Rig(max_reason_chars=32).refusals.reason(message) == reason

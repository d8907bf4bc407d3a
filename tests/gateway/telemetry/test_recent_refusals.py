"""The dashboard's list of refusals: the last few of each code, so one flooding code does
not push the others out; newest first; refusals after a decision with their decision id."""

from __future__ import annotations

from dataclasses import replace

from gateway.telemetry.recent_refusals import RecentRefusals
from gateway.telemetry.refusals import Refusal, Suppressed
from tests.gateway.telemetry.builders import record

DECISION_ID = "d" * 16  # the builders' decision

REFUSAL = Refusal(
    at=100.0,
    status=401,
    code="invalid_api_key",
    reason="missing or invalid API key for this gateway",
    endpoint="chat.completions",
    route=None,
    key_id=None,
    team=None,
    e2e_s=0.001,
    logged=True,
    sampled=True,
)


def test_a_flood_of_one_code_keeps_the_others_in_view() -> None:
    recent = RecentRefusals(max_codes=8, per_code=3, shown=5)
    recent.refused(replace(REFUSAL, at=50.0, status=413, code="request_too_large"))
    for i in range(1_000):
        recent.refused(replace(REFUSAL, at=100.0 + i))
    recent.refused(replace(REFUSAL, at=2_000.0, sampled=False))  # logged only: not kept
    recent.refused(Suppressed(2_001.0, 401, "invalid_api_key", 997, 60.0))
    rows = recent.rows()
    assert [(r["code"], r["at"]) for r in rows] == [
        ("invalid_api_key", 1_099.0),
        ("invalid_api_key", 1_098.0),
        ("invalid_api_key", 1_097.0),
        ("request_too_large", 50.0),
    ]


def test_codes_beyond_the_bound_are_not_kept_and_at_most_shown_are_served() -> None:
    recent = RecentRefusals(max_codes=2, per_code=5, shown=3)
    for code in ("a", "b", "c"):
        for i in range(2):
            recent.refused(replace(REFUSAL, code=code, at=float(i)))
    rows = recent.rows()
    assert len(rows) == 3 and {r["code"] for r in rows} <= {"a", "b"}


def test_a_refusal_after_the_decision_is_listed_with_its_decision_routed_ones_are_not() -> None:
    recent = RecentRefusals(max_codes=8)
    recent.consume(record())  # answered: no reason
    shed = record(backend=None, status=429, error="queue_full")
    shed.reason = "refused by flow control: its queue is full"
    recent.consume(shed)
    (row,) = recent.rows()
    assert (row["status"], row["code"], row["route"], row["decision"]) == (
        429, "queue_full", "default", DECISION_ID,
    )  # fmt: skip
    assert row["reason"] == shed.reason

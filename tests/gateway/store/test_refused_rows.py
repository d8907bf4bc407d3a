"""A refused request's row on SQLite and PostgreSQL: the `requests` table takes it beside
routed requests' rows in one batch, no migration needed, and reads it back as written."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.telemetry.refusals import Refusal
from gateway.telemetry.store_sink import refused_row
from tests.gateway.store.conftest import MakeWriter
from tests.gateway.store.rows import read_rows, request_row

AT = datetime(2025, 6, 1, 12, 0, 0, 250000, tzinfo=UTC)


def refusal(route: str | None, key_id: str | None) -> Refusal:
    return Refusal(
        at=AT.timestamp(),
        status=429,
        code="rate_limit_exceeded",
        reason="Rate limit reached for requests per minute: " + "é" * 300,
        endpoint="messages",
        route=route,
        key_id=key_id,
        team="search" if key_id else None,
        e2e_s=0.002,
        logged=False,
        sampled=True,
    )


async def test_refused_rows_are_written_beside_routed_ones(
    db_url: str, make_writer: MakeWriter
) -> None:
    writer = make_writer(db_url)
    await writer.start()
    rows = [
        request_row(AT),
        refused_row(refusal("chat", "k-1f3a")),
        refused_row(refusal(None, None)),
    ]
    assert all(writer.put("requests", row) for row in rows)
    assert await writer.flush_now() == 3
    routed, known, unknown = await read_rows(db_url, "requests")
    assert routed == request_row(AT)
    assert known == refused_row(refusal("chat", "k-1f3a"))
    assert (known["decision_id"], known["backend"], known["attempts"]) == ("", None, 0)
    assert known["reasons"]["refused"].endswith("é" * 300)
    assert (unknown["route"], unknown["key_id"], unknown["team"]) == ("", None, None)

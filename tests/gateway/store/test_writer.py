"""The writer on SQLite and PostgreSQL: rows of every table read back as they were put."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from gateway.store import writer as writer_module
from gateway.store.database import make_engine
from gateway.store.migrate import upgrade
from gateway.store.models import TABLES
from tests.conftest import eventually
from tests.gateway.store.conftest import MakeWriter, written
from tests.gateway.store.rows import (
    REPLICA,
    SAMPLES,
    probe_row,
    quality_event_row,
    quality_score_row,
    read_rows,
    request_row,
)

NOW = datetime(2025, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)


async def test_rows_of_every_table_read_back_unchanged(
    db_url: str, make_writer: MakeWriter
) -> None:
    counted: list[tuple[str, int]] = []
    writer = make_writer(db_url, on_written=lambda table, n: counted.append((table, n)))
    await writer.start()
    assert writer.status()["up"] is True  # migrated on start
    for table, sample in SAMPLES.items():
        assert writer.put(table, sample(NOW))
        assert writer.put(table, sample(NOW + timedelta(seconds=1)))

    assert await writer.flush_now() == 8
    for table, sample in SAMPLES.items():
        expected = [sample(NOW), sample(NOW + timedelta(seconds=1))]
        assert await read_rows(db_url, table) == expected, table
    assert sorted(counted) == sorted((table, 2) for table in TABLES)
    status = writer.status()
    assert (status["written"], status["dropped"], status["queued"]) == (8, 0, 0)


async def test_the_flush_task_writes_without_being_asked(
    db_url: str, make_writer: MakeWriter
) -> None:
    writer = make_writer(db_url, batch_size=3)
    await writer.start()
    for i in range(10):
        writer.put("probe_results", probe_row(NOW) | {"tokens": i})
    await eventually(written(writer, 10), "10 rows written")
    assert [row["tokens"] for row in await read_rows(db_url, "probe_results")] == list(range(10))


async def test_flush_now_waits_for_the_batch_the_flush_task_is_writing(
    db_url: str, make_writer: MakeWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = make_writer(db_url, flush_interval_s=3600)
    await writer.start()
    await writer.flush_now()  # the flush task now sleeps for an hour
    insert = writer._insert
    release = asyncio.Event()

    async def held(groups: dict[str, list[dict[str, Any]]]) -> None:
        await release.wait()
        await insert(groups)

    monkeypatch.setattr(writer, "_insert", held)
    writer.put("requests", request_row(NOW, decision_id="in-flight"))
    background = asyncio.get_running_loop().create_task(writer._write_next())
    await eventually(_taken(writer), "the batch taken for writing")

    flush = asyncio.get_running_loop().create_task(writer.flush_now())
    for _ in range(5):  # loop turns: flush_now reaches the write lock and waits there
        await asyncio.sleep(0)
    assert not flush.done()  # the queue is empty, but a batch is still being written
    release.set()
    await flush
    await background
    assert [row["decision_id"] for row in await read_rows(db_url, "requests")] == ["in-flight"]


def _taken(writer: Any) -> Any:
    async def check() -> bool:
        return bool(writer.status()["queued"] == 0 and writer._writing == 1)

    return check


async def test_stop_writes_what_is_still_queued(db_url: str, make_writer: MakeWriter) -> None:
    writer = make_writer(db_url, flush_interval_s=3600)
    await writer.start()
    await writer.flush_now()  # the flush task now sleeps for an hour
    writer.put("requests", request_row(NOW, decision_id="last"))
    await writer.stop()
    assert [row["decision_id"] for row in await read_rows(db_url, "requests")] == ["last"]
    assert writer.put("requests", request_row(NOW)) is False  # closed


async def test_rows_with_different_keys_share_a_batch(db_url: str, make_writer: MakeWriter) -> None:
    writer = make_writer(db_url)
    await writer.start()
    without_optional = request_row(NOW)
    for key in ("key_id", "backend", "error", "ttft_ms", "tpot_ms", "prompt"):
        del without_optional[key]
    writer.put("requests", request_row(NOW))
    writer.put("requests", without_optional)
    assert await writer.flush_now() == 2
    second = (await read_rows(db_url, "requests"))[1]
    assert second["backend"] is None and second["prompt"] is None and second["attempts"] == 2


async def test_rows_without_a_replica_get_an_empty_one(
    db_url: str, make_writer: MakeWriter
) -> None:
    def anonymous(row: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in row.items() if key != "replica"}

    writer = make_writer(db_url)
    await writer.start()
    writer.put("probe_results", anonymous(probe_row(NOW)))  # in a batch with a replica's row
    writer.put("probe_results", probe_row(NOW))
    writer.put("quality_scores", anonymous(quality_score_row(NOW)))  # the column left out
    writer.put("quality_events", quality_event_row(NOW) | {"replica": "h" * 80 + ":1"})
    assert await writer.flush_now() == 4
    assert [r["replica"] for r in await read_rows(db_url, "probe_results")] == ["", REPLICA]
    assert [r["replica"] for r in await read_rows(db_url, "quality_scores")] == [""]
    assert [r["replica"] for r in await read_rows(db_url, "quality_events")] == ["h" * 64]


async def test_strings_too_long_for_their_column_are_cut(
    db_url: str, make_writer: MakeWriter
) -> None:
    writer = make_writer(db_url)
    await writer.start()
    writer.put("requests", request_row(NOW, model="m" * 300, error="upstream_" + "x" * 100))
    writer.put("requests", request_row(NOW))
    assert await writer.flush_now() == 2
    long, short = await read_rows(db_url, "requests")
    assert (long["model"], long["error"]) == ("m" * 256, ("upstream_" + "x" * 100)[:64])
    assert short == request_row(NOW)


async def test_retention_deletes_old_rows_and_keeps_newer_ones(
    db_url: str, make_writer: MakeWriter
) -> None:
    fill = make_writer(db_url)
    await fill.start()
    ages_days = (30, 7.5, 6.5, 0)
    for table, sample in SAMPLES.items():
        for age in ages_days:
            fill.put(table, sample(NOW - timedelta(days=age)))
    assert await fill.flush_now() == 16

    clean = make_writer(db_url, retention_days=7, clock=NOW.timestamp)
    assert await clean.delete_expired() == 8
    for name in TABLES:
        kept = [row["created_at"] for row in await read_rows(db_url, name)]
        assert kept == [NOW - timedelta(days=6.5), NOW], name


async def test_the_retention_task_cleans_up_at_start(db_url: str, make_writer: MakeWriter) -> None:
    fill = make_writer(db_url)
    await fill.start()
    fill.put("quality_events", SAMPLES["quality_events"](NOW - timedelta(days=2)))
    fill.put("quality_events", SAMPLES["quality_events"](NOW))
    await fill.flush_now()

    later = NOW + timedelta(days=1)
    clean = make_writer(db_url, retention_days=1.5, clock=later.timestamp)
    await clean.start()

    async def cleaned() -> bool:
        return len(await read_rows(db_url, "quality_events")) == 1

    await eventually(cleaned, "the old row deleted")
    assert [row["created_at"] for row in await read_rows(db_url, "quality_events")] == [NOW]


async def test_put_from_other_threads(db_url: str, make_writer: MakeWriter) -> None:
    writer = make_writer(db_url, queue_size=10_000, batch_size=250)
    await writer.start()

    def produce(thread: int) -> None:
        for i in range(200):
            assert writer.put("probe_results", probe_row(NOW) | {"tokens": thread * 1000 + i})

    threads = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    await eventually(written(writer, 800), "800 rows written")
    tokens = sorted(row["tokens"] for row in await read_rows(db_url, "probe_results"))
    assert tokens == sorted(t * 1000 + i for t in range(4) for i in range(200))


@pytest.fixture
def statements() -> Iterator[list[tuple[str, str, int]]]:
    """(verb, table, rows) of each INSERT and DELETE any engine runs during the test."""
    seen: list[tuple[str, str, int]] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        words = statement.split()
        if words[0] in ("INSERT", "DELETE"):
            seen.append((words[0], words[2], cursor.rowcount))

    event.listen(Engine, "after_cursor_execute", record)
    yield seen
    event.remove(Engine, "after_cursor_execute", record)


async def test_retention_deletes_in_chunks_and_lets_writes_in_between(
    db_url: str, make_writer: MakeWriter, statements: list[tuple[str, str, int]]
) -> None:
    chunk = writer_module.RETENTION_CHUNK_ROWS
    expired = 2 * chunk + 2_000
    await upgrade(db_url)
    engine = make_engine(db_url, connect_timeout_s=5)
    try:
        async with engine.begin() as conn:
            old = probe_row(NOW - timedelta(days=30))
            await conn.execute(TABLES["probe_results"].insert(), [old] * expired)
            await conn.execute(TABLES["probe_results"].insert(), [probe_row(NOW)])
            await conn.execute(
                TABLES["quality_events"].insert(), [quality_event_row(old["created_at"])]
            )
    finally:
        await engine.dispose()
    writer = make_writer(db_url, migrate_on_start=False, retention_days=7, clock=NOW.timestamp)
    flushes: list[asyncio.Task[int]] = []

    def put_during_the_first_chunk(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("DELETE FROM probe_results") and not flushes:
            writer.put("probe_results", probe_row(NOW) | {"tokens": 99})
            flushes.append(asyncio.get_running_loop().create_task(writer.flush_now()))

    statements.clear()
    event.listen(Engine, "after_cursor_execute", put_during_the_first_chunk)
    try:
        assert await writer.delete_expired() == expired + 1
    finally:
        event.remove(Engine, "after_cursor_execute", put_during_the_first_chunk)
    assert await flushes[0] == 1
    probes = [(verb, rows) for verb, table, rows in statements if table == "probe_results"]
    # The row put while the first chunk was deleted was written before the second one.
    assert probes == [("DELETE", chunk), ("INSERT", 1), ("DELETE", chunk), ("DELETE", 2_000)]
    assert ("DELETE", "quality_events", 1) in statements
    kept = await read_rows(db_url, "probe_results")
    assert [(row["created_at"], row["tokens"]) for row in kept] == [(NOW, 12), (NOW, 99)]
    assert await read_rows(db_url, "quality_events") == []

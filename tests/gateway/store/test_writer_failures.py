"""The writer when the database is down, hangs or comes back: requests never notice."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from gateway.store.migrate import MIGRATION_LOCK_ID
from gateway.store.writer import StoreWriter
from tests.conftest import eventually
from tests.gateway.store.conftest import MakeWriter, written
from tests.gateway.store.rows import probe_row, read_rows, request_row

HoldLock = Callable[[str], AbstractAsyncContextManager[None]]

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
DEAD_URLS = {
    "postgres-refused": "postgresql+asyncpg://root:s3cret-pw@127.0.0.1:1/x",
    "postgres-refused-password-in-query": "postgresql+asyncpg://root@127.0.0.1:1/x?password=s3cret-pw",
    "sqlite-unwritable": "sqlite+aiosqlite:////proc/switchyard/store.db",
}


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """A port that accepts connections and never answers: a database that hangs."""
    peers: list[asyncio.StreamWriter] = []

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peers.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()
    for peer in peers:
        peer.close()
    await server.wait_closed()


@asynccontextmanager
async def _asyncpg(url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(False))
    try:
        yield conn
    finally:
        await conn.close()


@asynccontextmanager
async def hold_write_lock(url: str) -> AsyncIterator[None]:
    """Another session holds a lock no write gets past: PostgreSQL's on `requests`, SQLite's
    on the whole file. Released at the end."""
    if url.startswith("postgresql"):
        async with _asyncpg(url) as conn, conn.transaction():
            await conn.execute("LOCK TABLE requests IN ACCESS EXCLUSIVE MODE")
            yield
        return
    conn = sqlite3.connect(str(make_url(url).database), isolation_level=None)
    try:
        conn.execute("BEGIN EXCLUSIVE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


@pytest.mark.parametrize("url", DEAD_URLS.values(), ids=DEAD_URLS.keys())
async def test_a_dead_database_drops_rows_at_the_bound_and_raises_nothing(
    url: str, make_writer: MakeWriter
) -> None:
    dropped: list[tuple[str, int]] = []
    writer = make_writer(url, queue_size=5, on_dropped=lambda table, n: dropped.append((table, n)))
    await writer.start()

    accepted = [writer.put("requests", request_row(NOW)) for _ in range(7)]
    assert accepted == [True] * 5 + [False] * 2
    assert dropped == [("requests", 1), ("requests", 1)]
    await eventually(failed(writer), "a migration attempt failed")
    status = writer.status()
    assert status["up"] is False
    assert (status["queued"], status["dropped"], status["written"]) == (5, 2, 0)
    assert status["last_error"].startswith("migration: ")
    assert "s3cret-pw" not in str(status)

    await writer.stop(timeout_s=1.0)
    assert writer.status()["dropped"] == 7  # what could not be written at shutdown


async def test_a_failed_write_keeps_its_batch_and_says_why(make_writer: MakeWriter) -> None:
    writer = make_writer(
        DEAD_URLS["postgres-refused"], migrate_on_start=False, batch_size=2, queue_size=3
    )
    writer.put("probe_results", probe_row(NOW))
    writer.put("requests", request_row(NOW))
    writer.put("requests", request_row(NOW))
    assert await writer.flush_now() == 0
    status = writer.status()
    assert (status["queued"], status["dropped"], status["up"]) == (3, 0, False)
    assert not writer.put("requests", request_row(NOW))  # the kept batch counts to the bound
    assert status["last_error"] == (
        "write: ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 1)"
    )
    assert status["url"] == "postgresql+asyncpg://root:***@127.0.0.1:1/x"


async def test_rows_the_database_refuses_are_dropped_not_retried(
    db_url: str, make_writer: MakeWriter
) -> None:
    dropped: list[tuple[str, int]] = []
    writer = make_writer(
        db_url, flush_interval_s=3600, on_dropped=lambda table, n: dropped.append((table, n))
    )
    await writer.start()
    writer.put("requests", request_row(NOW, route=None))  # NOT NULL: refused, not "down"
    assert await writer.flush_now() == 0
    assert (writer.status()["queued"], dropped) == (0, [("requests", 1)])
    writer.put("requests", request_row(NOW, decision_id="next"))
    assert await writer.flush_now() == 1


async def test_rows_wait_out_an_outage_and_are_all_written(
    tmp_path: Path, make_writer: MakeWriter
) -> None:
    blocker = tmp_path / "data"
    blocker.mkdir()
    url = f"sqlite+aiosqlite:///{blocker}/store.db"
    writer = make_writer(url, batch_size=2)
    await writer.start()
    await eventually(migrated(writer), "the schema created")
    blocker.rename(tmp_path / "away")  # the database file is gone: every write fails
    blocker.write_text("not a directory")
    for number in range(5):
        writer.put("requests", request_row(NOW, decision_id=f"r{number}"))
    await eventually(failed(writer), "a write failed")
    assert writer.status()["dropped"] == 0
    blocker.unlink()
    (tmp_path / "away").rename(blocker)
    await eventually(written(writer, 5), "the rows written after the outage")
    rows = await read_rows(url, "requests")
    assert [row["decision_id"] for row in rows] == [f"r{n}" for n in range(5)]


def migrated(writer: StoreWriter) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return bool(writer.status()["up"])

    return check


def failed(writer: StoreWriter) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return writer.status()["last_error"] is not None and not writer.status()["up"]

    return check


async def test_start_returns_after_the_connect_timeout_when_the_database_hangs(
    silent_server: int, make_writer: MakeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"postgresql+asyncpg://root@127.0.0.1:{silent_server}/x"
    writer = make_writer(url, connect_timeout_s=0.3)
    await writer.start()
    assert "not ready yet; going on" in caplog.text  # its connect timeout ended the wait
    assert writer.put("requests", request_row(NOW))
    assert writer.status()["up"] is False
    await writer.stop(timeout_s=0.5)  # its connect timeout, or this one, ends the last try
    assert (writer.status()["written"], writer.status()["dropped"]) == (0, 1)


async def test_a_write_to_a_server_that_never_answers_times_out(
    silent_server: int, make_writer: MakeWriter
) -> None:
    url = f"postgresql+asyncpg://root@127.0.0.1:{silent_server}/x"
    writer = make_writer(url, migrate_on_start=False, connect_timeout_s=5, write_timeout_s=0.2)
    writer.put("requests", request_row(NOW))
    writer.put("probe_results", probe_row(NOW))
    assert await writer.flush_now() == 0
    status = writer.status()
    assert (status["queued"], status["dropped"], status["up"]) == (2, 0, False)
    assert status["last_error"] == "write timed out after 0.2 s"  # not the 5 s connect timeout


async def test_a_write_stuck_behind_a_lock_times_out_and_the_writer_recovers(
    db_url: str, make_writer: MakeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    dropped: list[tuple[str, int]] = []
    # 0.5 s, not less: the deadline covers the pool's first connection, which a loaded
    # machine (the whole suite running) can take a few hundred milliseconds to open.
    writer = make_writer(
        db_url,
        write_timeout_s=0.5,
        flush_interval_s=3600,  # only flush_now writes
        on_dropped=lambda table, n: dropped.append((table, n)),
    )
    # Not started: its retention task would race the other's writes.
    cleaner = make_writer(
        db_url, write_timeout_s=0.5, retention_days=1, clock=(NOW + timedelta(days=2)).timestamp
    )
    await writer.start()
    writer.put("requests", request_row(NOW, decision_id="before"))
    assert await writer.flush_now() == 1
    assert writer.status()["up"] is True

    async with hold_write_lock(db_url):
        writer.put("requests", request_row(NOW, decision_id="stuck"))
        assert await writer.flush_now() == 0
        status = writer.status()
        assert (status["up"], status["dropped"], status["written"]) == (False, 0, 1)
        assert (status["queued"], dropped) == (1, [])  # kept for when the lock is gone
        timed_out = "write timed out after 0.5 s"
        if db_url.startswith("postgresql"):
            assert status["last_error"] == timed_out
        else:  # SQLite waits for a locked file as long as a write may take: either ends it
            assert status["last_error"] in (
                timed_out,
                "write: OperationalError: database is locked",
            )

        assert await cleaner.delete_expired() == 0  # a retention chunk is bounded too
        assert "clean-up stopped after deleting 0 rows: " in caplog.text
        if db_url.startswith("postgresql"):
            assert "clean-up stopped after deleting 0 rows: timed out after 0.5 s" in caplog.text

    writer.put("requests", request_row(NOW, decision_id="after"))
    assert await writer.flush_now() == 2
    assert writer.status()["up"] is True
    assert [row["decision_id"] for row in await read_rows(db_url, "requests")] == [
        "before",
        "stuck",
        "after",
    ]
    assert await cleaner.delete_expired() == 3


async def test_a_migration_stuck_behind_another_times_out_and_is_retried(
    postgres_url: str, make_writer: MakeWriter
) -> None:
    async with _asyncpg(postgres_url) as other_gateway:
        await other_gateway.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_ID)
        writer = make_writer(postgres_url, write_timeout_s=0.2)
        await writer.start()
        status = writer.status()
        assert (status["up"], status["last_error"]) == (False, "migration timed out after 0.2 s")
        await other_gateway.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK_ID)

    async def migrated() -> bool:
        return bool(writer.status()["up"])

    await eventually(migrated, "the migration retried")


async def test_the_writer_catches_up_when_the_database_comes_back(
    tmp_path: Path, make_writer: MakeWriter
) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where the database directory should be")
    url = f"sqlite+aiosqlite:///{blocker}/store.db"
    writer = make_writer(url)
    await writer.start()
    writer.put("probe_results", probe_row(NOW))
    assert writer.status()["up"] is False

    blocker.unlink()
    blocker.mkdir()

    await eventually(written(writer, 1), "the queued row written")
    assert writer.status()["up"] is True
    assert [row["tokens"] for row in await read_rows(url, "probe_results")] == [12]


async def test_the_bound_holds_under_concurrent_threads(make_writer: MakeWriter) -> None:
    writer = make_writer(DEAD_URLS["sqlite-unwritable"], queue_size=500)
    accepted: list[int] = []

    def produce() -> None:
        accepted.append(sum(writer.put("probe_results", probe_row(NOW)) for _ in range(300)))

    threads = [threading.Thread(target=produce) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(accepted) == 500
    assert writer.status()["queued"] == 500
    assert writer.status()["dropped"] == 700


def test_an_unknown_table_is_a_programming_error(make_writer: MakeWriter) -> None:
    writer = make_writer(DEAD_URLS["sqlite-unwritable"])
    with pytest.raises(ValueError, match="unknown record table"):
        writer.put("nope", {})  # type: ignore[arg-type]


async def test_a_crash_of_the_flush_task_is_logged(
    sqlite_url: str, make_writer: MakeWriter, caplog: pytest.LogCaptureFixture
) -> None:
    def broken_counter(table: str, rows: int) -> None:
        raise RuntimeError("counter broke")

    writer = make_writer(sqlite_url, on_written=broken_counter)
    await writer.start()
    writer.put("probe_results", probe_row(NOW))

    async def logged() -> bool:
        return any("switchyard-store-flush stopped" in r.getMessage() for r in caplog.records)

    await eventually(logged, "the crash logged")

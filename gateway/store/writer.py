"""Writes records to the store off the request path: a bounded queue drained in batches.

The database being slow or down must never slow down or fail a request. So `put` only
appends to a bounded in-memory queue; a background task inserts batches. A batch that
fails because the database is down, unreachable or slow goes back to the head of the queue
and is written when the database answers again; rows that do not fit the queue, and
batches the database refuses (a constraint, a type), are dropped and counted.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Table, select
from sqlalchemy.exc import DataError, IntegrityError, ProgrammingError

from gateway.store import migrate
from gateway.store.config import StoreConfig
from gateway.store.database import (
    DATABASE_ERRORS,
    TimedOut,
    describe_error,
    make_engine,
    redact_url,
    within,
)
from gateway.store.models import TABLES, TableName
from gateway.store.rows import Row, group_rows

log = logging.getLogger("switchyard.store")

RowCounter = Callable[[str, int], None]

# What the database says about the rows themselves: the same batch would fail again, so it
# is dropped. Any other database error (refused, lost or timed-out connections, a server
# shutting down) keeps the batch for the next attempt. A batch whose COMMIT was cut off may
# thus be written twice: at least once, not at most once, across an outage.
_REFUSED_ROWS = (IntegrityError, DataError, ProgrammingError)

# Retention deletes at most this many rows of one table per transaction, and lets writes
# in between: one long DELETE would hold the write lock (and SQLite's file lock) throughout.
RETENTION_CHUNK_ROWS = 5_000


def _ignore(table: str, rows: int) -> None:
    pass


class StoreWriter:
    """Queues rows from any thread and writes them in batches on the event loop.

    `on_written(table, n)` and `on_dropped(table, n)` count rows; `on_dropped` also runs on
    whichever thread called `put`, so both must be thread-safe and must not raise.
    The constructor raises sqlalchemy.exc.ArgumentError for a malformed URL; after that, no
    database trouble raises out of any method.
    """

    def __init__(
        self,
        config: StoreConfig,
        url: str,
        *,
        on_written: RowCounter | None = None,
        on_dropped: RowCounter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._url = url
        self._shown_url = redact_url(url)
        # The driver's own statement timeout is a backstop behind our deadline (twice as
        # long): with both equal, which fires first, and so the error reported, is a race.
        self._engine = make_engine(
            url, config.connect_timeout_s, command_timeout_s=2 * config.write_timeout_s
        )
        self._on_written = on_written or _ignore
        self._on_dropped = on_dropped or _ignore
        self._clock = clock
        # put() runs on a telemetry thread and on the event loop. deque appends are atomic,
        # but "check the length, then append" is not; the lock makes the bound exact and is
        # held for nothing longer than that.
        self._lock = threading.Lock()
        self._queue: deque[tuple[str, Row]] = deque()
        self._writing = 0  # rows taken for the batch being written: still within the bound
        self._closed = False
        self._written = 0
        self._dropped = 0
        self._up = False
        self._last_error: str | None = None
        self._schema_ready = not config.migrate_on_start
        self._first_attempt = asyncio.Event()  # set after the first migration attempt
        if self._schema_ready:
            self._first_attempt.set()
        self._stopping = asyncio.Event()
        # One writer at a time: SQLite allows no more, and rows then land in queue order.
        self._write_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def url(self) -> str:
        """The database URL, secrets included: for connecting, never for showing."""
        return self._url

    def put(self, table: TableName, row: Row) -> bool:
        """Queue one row; False (and counted as dropped) when the queue is full or closed.

        Never blocks; safe from any thread. `row["created_at"]` is an aware UTC datetime.
        """
        if table not in TABLES:
            raise ValueError(f"unknown record table {table!r}")
        with self._lock:
            if not self._closed and len(self._queue) + self._writing < self._config.queue_size:
                self._queue.append((table, row))
                return True
            self._dropped += 1
        self._on_dropped(table, 1)
        return False

    async def start(self) -> None:
        """Migrate (if configured) and start writing; returns within about connect_timeout_s.

        A database that is down is reported in `status()` and retried, never raised.
        """
        self._tasks = [
            asyncio.create_task(self._flush_loop(), name="switchyard-store-flush"),
            asyncio.create_task(self._retention_loop(), name="switchyard-store-retention"),
        ]
        for task in self._tasks:
            task.add_done_callback(_report_crash)
        if not self._config.migrate_on_start:
            return
        try:
            await asyncio.wait_for(self._first_attempt.wait(), self._config.connect_timeout_s)
        except TimeoutError:
            log.warning("record store: %s not ready yet; going on", self._shown_url)

    async def stop(self, timeout_s: float = 5.0) -> None:
        """Write what is queued (for at most `timeout_s`), count the rest dropped, close."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        with self._lock:
            self._closed = True
        try:
            await asyncio.wait_for(self._finish(), timeout_s)
        except TimeoutError:
            log.warning("record store: gave up writing after %.1f s at shutdown", timeout_s)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._drop(self._take(len(self._queue)))
        await self._engine.dispose()

    async def flush_now(self) -> int:
        """Write the rows queued now, batch by batch; stops at the first failure. A batch
        the background task is writing counts: the first turn waits for it (the write
        lock), so the rows are in the database when this returns.

        Returns the number of rows written.
        """
        if not await self._prepare():
            return 0
        before = self._written
        batches = -(-(len(self._queue) + self._writing) // self._config.batch_size)
        for batch in range(batches):
            if batch:
                await asyncio.sleep(0)  # the loop's other tasks run between two batches
            if not await self._write_next():
                break
        return self._written - before

    async def delete_expired(self) -> int:
        """Delete rows older than `retention_days` from every table; returns how many.

        One table and at most RETENTION_CHUNK_ROWS rows per transaction, so writes go on
        in between. A failure stops the clean-up (the next one goes on from there).
        """
        cutoff = datetime.fromtimestamp(
            self._clock() - self._config.retention_days * 86_400, tz=UTC
        )
        deleted = 0
        try:
            for table in TABLES.values():
                while True:
                    async with self._write_lock:
                        chunk = await within(
                            self._config.write_timeout_s, self._delete_chunk(table, cutoff)
                        )
                    deleted += chunk
                    if chunk < RETENTION_CHUNK_ROWS:
                        break
                    await asyncio.sleep(0)
        except DATABASE_ERRORS as exc:
            error = describe_error(exc, self._url)
            log.warning("record store: clean-up stopped after deleting %d rows: %s", deleted, error)
        return deleted

    async def _delete_chunk(self, table: Table, cutoff: datetime) -> int:
        oldest = (
            select(table.c.id)
            .where(table.c.created_at < cutoff)
            .order_by(table.c.id)
            .limit(RETENTION_CHUNK_ROWS)
        )
        async with self._engine.begin() as conn:
            result = await conn.execute(table.delete().where(table.c.id.in_(oldest)))
        return result.rowcount

    def status(self) -> dict[str, Any]:
        """What the dashboard and /health show; the URL without its password."""
        return {
            "enabled": True,
            "url": self._shown_url,
            "up": self._up,
            "queued": len(self._queue),
            "written": self._written,
            "dropped": self._dropped,
            "last_error": self._last_error,
        }

    async def _flush_loop(self) -> None:
        while not self._stopping.is_set():
            if not (await self._prepare() and await self._write_next()):
                await self._pause(self._config.retry_after_s)
            elif len(self._queue) < self._config.batch_size:
                await self._pause(self._config.flush_interval_s)
            else:
                await asyncio.sleep(0)  # the loop's other tasks run between two batches

    async def _retention_loop(self) -> None:
        await self._first_attempt.wait()
        while not self._stopping.is_set():
            if self._schema_ready:
                deleted = await self.delete_expired()
                if deleted:
                    log.info("record store: deleted %d expired rows", deleted)
            await self._pause(self._config.retention_check_s)

    async def _finish(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.flush_now()

    async def _pause(self, seconds: float) -> None:
        with suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    async def _prepare(self) -> bool:
        """True once the tables exist; else tries the migration (again)."""
        if self._schema_ready:
            return True
        try:
            await migrate.upgrade(
                self._url,
                connect_timeout_s=self._config.connect_timeout_s,
                timeout_s=self._config.write_timeout_s,
            )
        except migrate.MIGRATION_ERRORS as exc:
            self._failed("migration", exc)
        else:
            self._schema_ready = True
            self._succeeded("migrated")
        finally:
            self._first_attempt.set()
        return self._schema_ready

    async def _write_next(self) -> bool:
        """Insert the next batch in one transaction; False if that failed (the batch is
        back at the head of the queue, or dropped if the database refused its rows)."""
        async with self._write_lock:
            batch = self._take(self._config.batch_size, writing=True)
            if not batch:
                return True
            groups = group_rows(batch)
            try:
                await within(self._config.write_timeout_s, self._insert(groups))
            except asyncio.CancelledError:
                self._drop(batch, written=True)
                raise
            except _REFUSED_ROWS as exc:
                self._drop(batch, written=True)
                self._failed("write", exc)
                return False
            except DATABASE_ERRORS as exc:
                self._put_back(batch)
                self._failed("write", exc)
                return False
            self._done_writing(batch)
        self._written += len(batch)
        for table, rows in groups.items():
            self._on_written(table, len(rows))
        self._succeeded("writing")
        return True

    async def _insert(self, groups: dict[str, list[Row]]) -> None:
        async with self._engine.begin() as conn:
            for table, rows in groups.items():
                await conn.execute(TABLES[table].insert(), rows)

    def _take(self, limit: int, *, writing: bool = False) -> list[tuple[str, Row]]:
        """The oldest `limit` rows; with `writing`, they count against the queue's bound
        until `_done_writing`, `_put_back` or `_drop(..., written=True)`."""
        with self._lock:
            batch = [self._queue.popleft() for _ in range(min(limit, len(self._queue)))]
            if writing:
                self._writing = len(batch)
            return batch

    def _done_writing(self, batch: list[tuple[str, Row]]) -> None:
        with self._lock:
            self._writing -= len(batch)

    def _put_back(self, batch: list[tuple[str, Row]]) -> None:
        """At the head of the queue, in order: written first when the database is back."""
        with self._lock:
            self._writing -= len(batch)
            self._queue.extendleft(reversed(batch))

    def _drop(self, batch: list[tuple[str, Row]], *, written: bool = False) -> None:
        if not batch:
            return
        with self._lock:
            self._dropped += len(batch)
            if written:
                self._writing -= len(batch)
        for table, rows in group_rows(batch).items():
            self._on_dropped(table, len(rows))

    def _failed(self, action: str, exc: BaseException) -> None:
        text = describe_error(exc, self._url)
        # "write timed out after 10 s", "write: OperationalError: ..."
        error = f"{action} {text}" if isinstance(exc, TimedOut) else f"{action}: {text}"
        # One warning per outage; repeats every retry_after_s would flood the log.
        level = logging.WARNING if self._up or self._last_error is None else logging.DEBUG
        log.log(level, "record store %s: %s failed: %s", self._shown_url, action, error)
        self._up = False
        self._last_error = error

    def _succeeded(self, what: str) -> None:
        if not self._up and self._last_error is not None:
            log.info("record store %s: back up (%s)", self._shown_url, what)
        self._up = True


def _report_crash(task: asyncio.Task[None]) -> None:
    # Database errors are handled in the loops; anything else is a bug, and without this
    # it would only surface as a queue that never drains.
    if not task.cancelled() and task.exception() is not None:
        log.error("record store: %s stopped", task.get_name(), exc_info=task.exception())

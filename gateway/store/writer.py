"""Writes records to the store off the request path: a bounded queue drained in batches.

The database being slow or down must never slow down or fail a request. So `put` only
appends to a bounded in-memory queue; a background task inserts batches; rows that do not
fit, or whose batch fails, are dropped and counted.
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

from sqlalchemy import DefaultClause, String, Table, select

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

log = logging.getLogger("switchyard.store")

Row = dict[str, Any]
RowCounter = Callable[[str, int], None]

# What a database being down, slow or refusing a row looks like: the driver's errors arrive
# wrapped in SQLAlchemyError, except refused or failed connections (OSError) and timeouts.

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
            if not self._closed and len(self._queue) < self._config.queue_size:
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
        """Write the rows queued now, batch by batch; stops at the first failure.

        Returns the number of rows written.
        """
        if not await self._prepare():
            return 0
        before = self._written
        batches = -(-len(self._queue) // self._config.batch_size)
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
        """Insert the next batch in one transaction; False if that failed (batch dropped)."""
        async with self._write_lock:
            batch = self._take(self._config.batch_size)
            if not batch:
                return True
            groups = _group(batch)
            try:
                await within(self._config.write_timeout_s, self._insert(groups))
            except asyncio.CancelledError:
                self._drop(batch)
                raise
            except DATABASE_ERRORS as exc:
                self._drop(batch)
                self._failed("write", exc)
                return False
        self._written += len(batch)
        for table, rows in groups.items():
            self._on_written(table, len(rows))
        self._succeeded("writing")
        return True

    async def _insert(self, groups: dict[str, list[Row]]) -> None:
        async with self._engine.begin() as conn:
            for table, rows in groups.items():
                await conn.execute(TABLES[table].insert(), rows)

    def _take(self, limit: int) -> list[tuple[str, Row]]:
        with self._lock:
            return [self._queue.popleft() for _ in range(min(limit, len(self._queue)))]

    def _drop(self, batch: list[tuple[str, Row]]) -> None:
        if not batch:
            return
        with self._lock:
            self._dropped += len(batch)
        for table, rows in _group(batch).items():
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


def _group(batch: list[tuple[str, Row]]) -> dict[str, list[Row]]:
    """Rows by table, each table's rows with the same keys (one executemany needs that).

    A key some rows lack gets the column's server default there (`replica`: ''), else None.
    """
    groups: dict[str, list[Row]] = {}
    for table, row in batch:
        groups.setdefault(table, []).append(_fit(row, _LENGTHS[table]))
    for table, rows in groups.items():
        keys = set(rows[0])
        if any(set(row) != keys for row in rows):
            keys = set().union(*rows)
            missing = _DEFAULTS[table]
            groups[table] = [
                {key: row[key] if key in row else missing.get(key) for key in keys} for row in rows
            ]
    return groups


def _fit(row: Row, lengths: dict[str, int]) -> Row:
    """The row with strings cut to their column's length.

    PostgreSQL refuses a longer value (SQLite does not), and with it the whole batch.
    """
    for column, length in lengths.items():
        value = row.get(column)
        if isinstance(value, str) and len(value) > length:
            row = row | {column: value[:length]}
    return row


_LENGTHS: dict[str, dict[str, int]] = {
    name: {
        column.name: column.type.length
        for column in table.columns
        if isinstance(column.type, String) and column.type.length
    }
    for name, table in TABLES.items()
}

_DEFAULTS: dict[str, dict[str, str]] = {
    name: {
        column.name: column.server_default.arg
        for column in table.columns
        if isinstance(column.server_default, DefaultClause)
        and isinstance(column.server_default.arg, str)
    }
    for name, table in TABLES.items()
}

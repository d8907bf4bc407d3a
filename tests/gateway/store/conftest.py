"""Record store fixtures: a SQLite file, a throwaway PostgreSQL database, writers that stop."""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from gateway.store.config import StoreConfig
from gateway.store.writer import StoreWriter
from tests.conftest import DATABASE_URL_FOR_TESTS


def _server() -> tuple[str, int, str, list[str], str | None]:
    """(host, port, database, users to try, password): SWITCHYARD_DATABASE_URL when it names
    a PostgreSQL server, else the local one (trust auth, database `test`)."""
    url = DATABASE_URL_FOR_TESTS
    if url and url.startswith("postgresql"):
        parsed = make_url(url)
        user = parsed.username or "postgres"
        return (
            parsed.host or "127.0.0.1",
            parsed.port or 5432,
            parsed.database or "test",
            [user],
            parsed.password,
        )
    return "127.0.0.1", 5432, "test", ["root", "postgres"], None


PG_HOST, PG_PORT, PG_ADMIN_DATABASE, PG_USERS, PG_PASSWORD = _server()

MakeWriter = Callable[..., StoreWriter]


async def _admin_connection() -> tuple[asyncpg.Connection, str]:
    problems: list[str] = []
    for user in PG_USERS:
        try:
            conn = await asyncpg.connect(
                host=PG_HOST,
                port=PG_PORT,
                user=user,
                password=PG_PASSWORD,
                database=PG_ADMIN_DATABASE,
                timeout=3,
            )
        except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
            problems.append(f"{user}: {exc}")
        else:
            return conn, user
    message = f"PostgreSQL at {PG_HOST}:{PG_PORT} unusable ({'; '.join(problems)})"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A fresh, empty database on the local server, dropped afterwards."""
    admin, user = await _admin_connection()
    name = f"switchyard_test_{secrets.token_hex(6)}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        secret = f":{PG_PASSWORD}" if PG_PASSWORD else ""
        yield f"postgresql+asyncpg://{user}{secret}@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/records/store.db"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test that takes this runs on both databases."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def make_writer() -> AsyncIterator[MakeWriter]:
    """Builds writers with fast test timings; stops every one of them at the end."""
    writers: list[StoreWriter] = []

    def make(url: str, /, **options: Any) -> StoreWriter:
        callbacks = {
            k: options.pop(k) for k in ("on_written", "on_dropped", "clock") if k in options
        }
        settings: dict[str, Any] = {
            "flush_interval_s": 0.02,
            "retry_after_s": 0.05,
            "connect_timeout_s": 2.0,
            "retention_check_s": 3600.0,
            # The retention task runs at start: with the real clock and a week, it would
            # delete the tests' rows (dated 2025) while they are written.
            "retention_days": 36_500.0,
        }
        writer = StoreWriter(StoreConfig(**(settings | options)), url, **callbacks)
        writers.append(writer)
        return writer

    yield make
    for writer in writers:
        await writer.stop(timeout_s=1.0)
    await _aiosqlite_threads_done()


async def _aiosqlite_threads_done(timeout_s: float = 2.0) -> None:
    """Keeps the loop open until aiosqlite's threads end.

    After a failed connect, aiosqlite's thread still reports back to the loop; if the test's
    loop has closed by then, the thread dies with "Event loop is closed".
    """
    deadline = time.monotonic() + timeout_s
    while any("_connection_worker_thread" in thread.name for thread in threading.enumerate()):
        if time.monotonic() > deadline:
            return
        await asyncio.sleep(0.005)


def written(writer: StoreWriter, rows: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return int(writer.status()["written"]) >= rows

    return check

"""Schema migrations, run from inside a running event loop (the gateway's or the CLI's).

Alembic is synchronous and its usual async env.py calls asyncio.run(), which cannot nest.
So the connection is opened here, Alembic runs on it through `run_sync`, and env.py finds
it in `config.attributes["connection"]`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.database import DATABASE_ERRORS, make_engine, within

MIGRATION_ERRORS: tuple[type[BaseException], ...] = (*DATABASE_ERRORS, CommandError)

DEFAULT_CONNECT_TIMEOUT_S = 10.0
# Migrations hold this PostgreSQL advisory lock (any constant works): gateways that start
# together take turns instead of racing to create the tables.
MIGRATION_LOCK_ID = 0x5377_7944_6200

_Step = Callable[[Config, str], None]  # command.upgrade or command.downgrade

# Alembic keeps the running migration in module globals (alembic.context, alembic.op); two
# migrations interleaved on one loop would overwrite each other's. One lock per loop.
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config pointing at the installed migration scripts (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(resources.files("migrations")))
    config.set_main_option("path_separator", "os")
    if url is not None:
        config.attributes["url"] = url  # not a main option: those interpolate % signs
    return config


async def upgrade(
    url: str,
    revision: str = "head",
    *,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    timeout_s: float | None = None,
) -> None:
    """Migrate the database at `url` up to `revision`.

    With `timeout_s`, the migration gives up (rolled back, `database.TimedOut`) when it
    takes longer than that once connected; without, it may take as long as it needs.
    """
    await _run(url, connect_timeout_s, timeout_s, command.upgrade, revision)


async def downgrade(
    url: str,
    revision: str,
    *,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    timeout_s: float | None = None,
) -> None:
    """Migrate the database at `url` down to `revision` ("base": no tables left)."""
    await _run(url, connect_timeout_s, timeout_s, command.downgrade, revision)


async def current(url: str, *, connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S) -> str | None:
    """The database's revision; None when it was never migrated."""
    engine = make_engine(url, connect_timeout_s)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_current_revision)
    finally:
        await engine.dispose()


def head() -> str | None:
    """The newest revision among the installed scripts."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def _current_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


async def _run(
    url: str, connect_timeout_s: float, timeout_s: float | None, step: _Step, revision: str
) -> None:
    # The driver's statement timeout backs our deadline up; equal, they would race.
    backstop = 2 * timeout_s if timeout_s is not None else None
    engine = make_engine(url, connect_timeout_s, command_timeout_s=backstop)
    lock = _locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())
    try:
        async with lock, engine.connect() as conn:  # connecting: bounded by connect_timeout_s
            migration = _migrate(conn, url, step, revision)
            await (migration if timeout_s is None else within(timeout_s, migration))
    finally:
        await engine.dispose()


async def _migrate(conn: AsyncConnection, url: str, step: _Step, revision: str) -> None:
    async with conn.begin():
        await conn.run_sync(_run_alembic, url, step, revision)


def _run_alembic(conn: Connection, url: str, step: _Step, revision: str) -> None:
    config = alembic_config(url)
    config.attributes["connection"] = conn
    step(config, revision)

"""Alembic's entry point for the record store, in the gateway or from the `alembic` command.

`gateway.store.migrate` runs inside the gateway's event loop, so it opens the connection
itself and hands it over in `config.attributes["connection"]`; only the plain `alembic`
command lets this file create an engine and run its own loop.
"""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from gateway.store.config import DATABASE_URL_ENV, normalize_database_url
from gateway.store.database import make_engine
from gateway.store.migrate import MIGRATION_LOCK_ID
from gateway.store.models import metadata

config = context.config
if config.config_file_name is not None:  # the `alembic` command with alembic.ini
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _url() -> str:
    url = os.environ.get(DATABASE_URL_ENV) or config.attributes.get("url")
    url = url or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError(f"no database URL: set {DATABASE_URL_ENV} or sqlalchemy.url")
    try:
        return normalize_database_url(str(url))  # postgresql:// means asyncpg, as in the gateway
    except ValueError as exc:
        raise RuntimeError(f"database URL: {exc}") from None


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite cannot ALTER much
    )


def do_run_migrations(connection: Connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK_ID})
        context.run_migrations()


async def _run_with_own_engine() -> None:
    engine = make_engine(_url(), connect_timeout_s=10.0)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(do_run_migrations)
            await connection.commit()
    finally:
        await engine.dispose()


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        asyncio.run(_run_with_own_engine())
    else:
        do_run_migrations(connection)


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()

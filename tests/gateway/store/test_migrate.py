"""Migrations on SQLite and PostgreSQL: up, down to nothing, up again, from a running loop."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from gateway.store.database import make_engine
from gateway.store.migrate import current, downgrade, head, upgrade
from gateway.store.models import TABLES, metadata

EXPECTED_INDEXES = {
    "requests": {"ix_requests_created_at", "ix_requests_backend_created_at"},
    "quality_events": {"ix_quality_events_created_at"},
    "quality_scores": {"ix_quality_scores_created_at"},
    "probe_results": {"ix_probe_results_created_at"},
    "client_keys": {"ix_client_keys_prefix"},
}
RECORD_TABLES = set(EXPECTED_INDEXES) - {"client_keys"}
"""Retention deletes by age from these; never from the keys."""


def _schema(conn: Connection) -> dict[str, set[str]]:
    inspector = inspect(conn)
    return {
        table: {index["name"] or "" for index in inspector.get_indexes(table)}
        for table in inspector.get_table_names()
        if table != "alembic_version"
    }


def _drift(conn: Connection) -> list[Any]:
    return list(compare_metadata(MigrationContext.configure(conn), metadata))


async def _inspect(url: str, look: Any) -> Any:
    engine = make_engine(url, connect_timeout_s=5)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await engine.dispose()


async def test_upgrade_creates_the_tables_and_their_indexes(db_url: str) -> None:
    assert await current(db_url) is None
    await upgrade(db_url)
    assert await _inspect(db_url, _schema) == EXPECTED_INDEXES
    assert set(TABLES) == RECORD_TABLES
    assert await current(db_url) == head() == "0005"


async def test_downgrade_to_base_removes_them_and_upgrade_works_again(db_url: str) -> None:
    await upgrade(db_url)
    await downgrade(db_url, "base")
    assert await _inspect(db_url, _schema) == {}
    assert await current(db_url) is None
    await upgrade(db_url, "0001")
    assert set(await _inspect(db_url, _schema)) == RECORD_TABLES
    assert await current(db_url) == "0001"
    await upgrade(db_url)
    assert await _inspect(db_url, _schema) == EXPECTED_INDEXES


async def test_0002_comes_off_again_and_keeps_the_records(db_url: str) -> None:
    await upgrade(db_url)
    await downgrade(db_url, "0001")
    assert set(await _inspect(db_url, _schema)) == RECORD_TABLES
    assert await current(db_url) == "0001"


async def test_upgrade_twice_is_harmless(db_url: str) -> None:
    await upgrade(db_url)
    await upgrade(db_url)
    assert await current(db_url) == "0005"


async def test_the_migration_matches_the_models(db_url: str) -> None:
    await upgrade(db_url)
    assert await _inspect(db_url, _drift) == []


async def test_0003_adds_key_budgets_and_comes_off_again(db_url: str) -> None:
    await upgrade(db_url)
    await downgrade(db_url, "0002")
    assert await current(db_url) == "0002"
    await upgrade(db_url, "0003")
    assert await current(db_url) == "0003"
    await upgrade(db_url)
    assert await _inspect(db_url, _drift) == []


async def test_0004_adds_flow_control_and_comes_off_again(db_url: str) -> None:
    await upgrade(db_url)
    await downgrade(db_url, "0003")
    assert await current(db_url) == "0003"
    await upgrade(db_url)
    assert await current(db_url) == "0005"
    assert await _inspect(db_url, _drift) == []


async def test_0005_adds_the_cascade_column_and_takes_it_off_again(db_url: str) -> None:
    await upgrade(db_url)
    await downgrade(db_url, "0004")
    assert await current(db_url) == "0004"
    assert await _inspect(db_url, _drift) != []  # the models have the column, the table not
    await upgrade(db_url)
    assert await current(db_url) == "0005"
    assert await _inspect(db_url, _drift) == []

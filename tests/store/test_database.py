"""The store's URL (environment over config), its redacted form, and the engine's file."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from gateway.store import DATABASE_URL_ENV, make_engine, redact_url, resolve_url
from gateway.store.database import describe_error
from gateway.telemetry.config import StoreConfig

CONFIGURED = "sqlite+aiosqlite:///config.db"


@pytest.mark.parametrize(
    ("env", "configured", "expected"),
    [
        (None, None, None),
        (None, CONFIGURED, CONFIGURED),
        ("postgresql+asyncpg://u@h/db", CONFIGURED, "postgresql+asyncpg://u@h/db"),
        ("", CONFIGURED, CONFIGURED),
        (None, "  ", None),
    ],
)
def test_resolve_url(
    env: str | None, configured: str | None, expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    if env is not None:
        monkeypatch.setenv(DATABASE_URL_ENV, env)
    assert resolve_url(StoreConfig(url=configured)) == expected


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql+asyncpg://app:pa%40ss@db:5432/rec",
            "postgresql+asyncpg://app:***@db:5432/rec",
        ),
        ("postgresql+asyncpg://app@db/rec", "postgresql+asyncpg://app@db/rec"),
        ("sqlite+aiosqlite:///var/x.db", "sqlite+aiosqlite:///var/x.db"),
        ("postgresql://app:secret@db:port/rec", "<unparseable database URL>"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


async def test_make_engine_creates_the_sqlite_directory(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "store.db"
    engine = make_engine(f"sqlite+aiosqlite:///{path}", connect_timeout_s=1)
    try:
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT 1"))).scalar() == 1
    finally:
        await engine.dispose()
    assert path.is_file()


async def test_errors_keep_parameters_and_password_out(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/x.db"
    engine = make_engine(url, connect_timeout_s=1)
    try:
        async with engine.connect() as conn:
            with pytest.raises(DBAPIError) as caught:
                await conn.execute(text("SELECT * FROM missing WHERE a = :a"), {"a": "s3cret"})
    finally:
        await engine.dispose()
    assert "s3cret" not in str(caught.value)
    assert describe_error(caught.value, url) == "OperationalError: no such table: missing"
    refused = OSError("connect to app:s3cret@db failed")
    assert describe_error(refused, "postgresql+asyncpg://app:s3cret@db/x") == (
        "OSError: connect to app:***@db failed"
    )

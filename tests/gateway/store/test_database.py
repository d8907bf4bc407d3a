"""The store's URL (environment over config), its redacted form, and the engine's file."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import JSON, literal, select, text
from sqlalchemy.exc import DBAPIError

from gateway.errors import ConfigError
from gateway.store.config import DATABASE_URL_ENV, StoreConfig, resolve_url
from gateway.store.database import describe_error, make_engine, redact_url

CONFIGURED = "sqlite+aiosqlite:///config.db"


@pytest.mark.parametrize(
    ("env", "configured", "expected"),
    [
        (None, None, None),
        (None, CONFIGURED, CONFIGURED),
        ("postgresql+asyncpg://u@h/db", CONFIGURED, "postgresql+asyncpg://u@h/db"),
        ("", CONFIGURED, CONFIGURED),
        ("  ", None, None),
        # The environment's URL gets the config's normalisation.
        (" postgresql://u@h/db ", None, "postgresql+asyncpg://u@h/db"),
        ("postgres://u@h/db", CONFIGURED, "postgresql+asyncpg://u@h/db"),
        ("sqlite:///env.db", CONFIGURED, "sqlite+aiosqlite:///env.db"),
        (None, "postgresql://u@h/db", "postgresql+asyncpg://u@h/db"),
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
    "env", ["mysql+aiomysql://u:s3cret@h/db", "postgresql+psycopg2://u@h/db", "just-a-path.db"]
)
def test_an_unusable_environment_url_is_a_config_error(
    env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, env)
    with pytest.raises(ConfigError) as caught:
        resolve_url(StoreConfig(url=CONFIGURED))
    assert caught.value.source == "environment"
    [problem] = caught.value.problems
    assert problem.startswith(f"{DATABASE_URL_ENV}: expected sqlite+aiosqlite:///file.db or ")
    assert "s3cret" not in problem


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
        (
            "postgresql+asyncpg://app@db/rec?password=s3cret&sslmode=require",
            "postgresql+asyncpg://app@db/rec?password=***&sslmode=require",
        ),
        (
            "postgresql+asyncpg://app:pw@db/rec?PGPASSWORD=a&client_secret=b&sslkey=/k.pem"
            "&sslcert=/c.pem&ssl_password=c&ssl_password=d",
            "postgresql+asyncpg://app:***@db/rec?PGPASSWORD=***&client_secret=***"
            "&ssl_password=***&sslcert=%2Fc.pem&sslkey=***",
        ),
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


def test_errors_keep_secrets_of_the_query_string_out() -> None:
    url = "postgresql+asyncpg://app@db/x?password=s3cr%26t&sslkey=/etc/k.pem&sslmode=require"
    failed = OSError("cannot connect to app@db/x?password=s3cr%26t (key /etc/k.pem, s3cr&t)")
    assert describe_error(failed, url) == (
        "OSError: cannot connect to app@db/x?password=*** (key ***, ***)"
    )
    assert describe_error(TimeoutError(), url) == "TimeoutError"


async def test_json_columns_are_serialised_with_orjson(tmp_path: Path) -> None:
    """Non-string keys become strings (as with json.dumps), NaN becomes null (json.dumps
    writes NaN, which PostgreSQL refuses, and with it the whole batch)."""
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path}/j.db", connect_timeout_s=1)
    value = {1: [float("nan"), "Grüß", 2.5, None]}
    try:
        async with engine.connect() as conn:
            query = select(literal(value, JSON))  # a bound value: serialised, read back
            assert (await conn.execute(query)).scalar() == {"1": [None, "Grüß", 2.5, None]}
    finally:
        await engine.dispose()

"""Where the record store lives: the URL (config or environment), its redacted form, the engine."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, StatementError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from gateway.telemetry.config import StoreConfig

DATABASE_URL_ENV = "SWITCHYARD_DATABASE_URL"
_MAX_ERROR_CHARS = 300


def resolve_url(config: StoreConfig) -> str | None:
    """The store's URL: SWITCHYARD_DATABASE_URL, else `store.url`; None (store off) when empty."""
    url = (os.environ.get(DATABASE_URL_ENV) or config.url or "").strip()
    return url or None


def redact_url(url: str | URL) -> str:
    """The URL with its password replaced by ***, safe for logs and status pages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # the raw text may still hold a password
        return "<unparseable database URL>"


def describe_error(exc: BaseException, url: str) -> str:
    """A database error's first line, without SQL, parameters or the URL's password."""
    cause = exc.orig if isinstance(exc, StatementError) and exc.orig is not None else exc
    lines = str(cause).strip().splitlines()
    text = f"{type(cause).__name__}: {lines[0] if lines else ''}"
    with suppress(ArgumentError, ValueError):
        password = make_url(url).password
        if password:
            text = text.replace(str(password), "***")
    return text[:_MAX_ERROR_CHARS]


def make_engine(url: str, connect_timeout_s: float) -> AsyncEngine:
    """An async engine whose connection attempts give up after `connect_timeout_s`.

    Statement parameters are kept out of error messages: they can hold prompt text.
    """
    parsed = make_url(url)
    connect_args: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        _create_parent_dir(parsed)
        connect_args["timeout"] = connect_timeout_s  # how long to wait for a locked file
    elif parsed.get_driver_name() == "asyncpg":
        connect_args["timeout"] = connect_timeout_s
    return create_async_engine(
        parsed, pool_pre_ping=True, hide_parameters=True, connect_args=connect_args
    )


def _create_parent_dir(url: URL) -> None:
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return
    # Best effort: if this fails, connecting fails too, and says so where errors are reported.
    with suppress(OSError):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)

"""Where the record store lives: the URL (config or environment), its redacted form, the engine."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus

import orjson
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError, StatementError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

_MAX_ERROR_CHARS = 300
_MASK = "***"

T = TypeVar("T")


DATABASE_ERRORS: tuple[type[BaseException], ...] = (SQLAlchemyError, OSError, TimeoutError)
"""What a database that is down, slow or refusing raises: logged and counted, never fatal."""


class TimedOut(TimeoutError):
    """The store's own deadline (`write_timeout_s`) passed, not a driver's timeout."""


def _is_secret(parameter: str) -> bool:
    name = parameter.lower()
    return name == "sslkey" or "password" in name or "secret" in name


def redact_url(url: str | URL) -> str:
    """The URL with its password, and query parameters naming a password, secret or
    sslkey, replaced by ***: safe for logs and status pages."""
    try:
        parsed = make_url(url)
        query = {k: _MASK if _is_secret(k) else v for k, v in parsed.query.items()}
        shown = parsed.set(query=query).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # the raw text may still hold a password
        return "<unparseable database URL>"
    return shown.replace(f"={quote_plus(_MASK)}", f"={_MASK}")


def _secrets(url: str) -> list[str]:
    """The URL's password and secret query values, as given and as they appear encoded."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return []
    values = [str(parsed.password)] if parsed.password else []
    for name, value in parsed.query.items():
        if _is_secret(name):
            values += [value] if isinstance(value, str) else list(value)
    found = {form for v in values if v for form in (v, quote(v, safe=""), quote_plus(v))}
    # Longest first: a secret that contains another must not be masked only in part.
    return sorted(found, key=len, reverse=True)


def describe_error(exc: BaseException, url: str) -> str:
    """A database error's first line, without SQL, parameters or the URL's secrets; for
    our own deadline (`TimedOut`), just "timed out after N s"."""
    if isinstance(exc, TimedOut):
        return str(exc)
    cause = exc.orig if isinstance(exc, StatementError) and exc.orig is not None else exc
    lines = str(cause).strip().splitlines()
    text = f"{type(cause).__name__}: {lines[0]}" if lines else type(cause).__name__
    for secret in _secrets(url):
        text = text.replace(secret, _MASK)
    return text[:_MAX_ERROR_CHARS]


async def within(timeout_s: float, work: Awaitable[T]) -> T:
    """`await work`, cancelled after `timeout_s`: then TimedOut ("timed out after N s").

    A driver's own timeout inside (connecting, asyncpg's command_timeout) stays a plain
    TimeoutError.
    """
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            return await work
    except TimeoutError:
        if deadline.expired():
            raise TimedOut(f"timed out after {timeout_s:g} s") from None
        raise


def _json_dumps(value: Any) -> str:
    # About ten times json.dumps's speed: bind processing runs on the event loop.
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def make_engine(
    url: str, connect_timeout_s: float, *, command_timeout_s: float | None = None
) -> AsyncEngine:
    """An async engine whose connection attempts give up after `connect_timeout_s`.

    With `command_timeout_s`, PostgreSQL statements are cancelled after that long, and
    SQLite waits that long (not `connect_timeout_s`) for a locked file.
    Statement parameters are kept out of error messages: they can hold prompt text.
    JSON columns are (de)serialised with orjson.
    """
    parsed = make_url(url)
    connect_args: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        _create_parent_dir(parsed)
        # How long to wait for a locked file.
        connect_args["timeout"] = command_timeout_s or connect_timeout_s
    elif parsed.get_driver_name() == "asyncpg":
        connect_args["timeout"] = connect_timeout_s
        if command_timeout_s is not None:
            connect_args["command_timeout"] = command_timeout_s
    return create_async_engine(
        parsed,
        pool_pre_ping=True,
        hide_parameters=True,
        connect_args=connect_args,
        json_serializer=_json_dumps,
        json_deserializer=orjson.loads,
    )


def _create_parent_dir(url: URL) -> None:
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return
    # Best effort: if this fails, connecting fails too, and says so where errors are reported.
    with suppress(OSError):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)

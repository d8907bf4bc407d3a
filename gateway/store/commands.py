"""`switchyard db upgrade|downgrade|current`: the record store's schema, from a shell.

The database URL comes from $SWITCHYARD_DATABASE_URL or the config's `store.url`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from gateway.store.config import DATABASE_URL_ENV, resolve_url
from gateway.store.database import DATABASE_ERRORS, describe_error, redact_url

if TYPE_CHECKING:
    from gateway.config.root import Config


def add_db_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], help_text: str
) -> argparse.ArgumentParser:
    """Register `db` and its steps on the `switchyard` parser (the CLI sets its `func`,
    which loads the config and calls `run_db_command`)."""
    db = sub.add_parser(
        "db",
        help=help_text,
        description="The database URL comes from $SWITCHYARD_DATABASE_URL or store.url.",
    )
    steps = db.add_subparsers(dest="db_command", required=True)
    upgrade = steps.add_parser("upgrade", help="create or update the tables")
    upgrade.add_argument("--revision", default="head")
    downgrade = steps.add_parser("downgrade", help="undo migrations down to REVISION")
    downgrade.add_argument("revision", help='a revision id, or "base" to drop every table')
    steps.add_parser("current", help="print the database's revision")
    for step in (upgrade, downgrade, steps.choices["current"]):
        step.add_argument("--config", help="config YAML (default: the bundled embedded example)")
    return db


def run_db_command(config: Config, args: argparse.Namespace) -> int:
    """0: done (the revision on stdout); 1: the database failed; 2: nothing to run on."""
    from alembic.util import CommandError

    url = resolve_url(config.store)
    if url is None:
        print(f"error: no database: set {DATABASE_URL_ENV} or store.url", file=sys.stderr)
        return 2
    try:
        revision = asyncio.run(_step(args, url))
    except CommandError as exc:  # an unknown revision, for example
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except DATABASE_ERRORS as exc:
        print(f"error: {redact_url(url)}: {describe_error(exc, url)}", file=sys.stderr)
        return 1
    print(f"{redact_url(url)}: revision {revision or 'none (no tables)'}")
    return 0


async def _step(args: argparse.Namespace, url: str) -> str | None:
    from gateway.store import migrate

    if args.db_command == "upgrade":
        await migrate.upgrade(url, args.revision)
    elif args.db_command == "downgrade":
        await migrate.downgrade(url, args.revision)
    return await migrate.current(url)

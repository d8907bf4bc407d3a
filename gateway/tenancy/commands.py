"""`switchyard keys create|list|rotate|revoke`: virtual keys in the store, from a shell.

The database is the config's store (`store.url` or SWITCHYARD_DATABASE_URL) and the keys
are hashed with its `keys` secret, as the gateway does; the schema is brought up to date
first (as the gateway does on start, unless `store.migrate_on_start` is false). A created
or rotated key is printed once, on stdout; nothing else prints it again.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeAlias

import orjson
from pydantic import ValidationError

from gateway.errors import ConfigError
from gateway.store.config import resolve_url
from gateway.tenancy.key_material import SecretError, load_server_secret, shown_prefix
from gateway.tenancy.key_specs import KeySpec, UnknownRoutes

if TYPE_CHECKING:
    from gateway.config.root import Config
    from gateway.store.keys import KeyRow
    from gateway.tenancy.key_admin import KeyAdmin

_Step: TypeAlias = "Callable[[KeyAdmin, argparse.Namespace, Config], Coroutine[Any, Any, int]]"


def add_keys_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], help_text: str
) -> argparse.ArgumentParser:
    """Register `keys` and its steps on the `switchyard` parser (the CLI sets its `func`,
    which loads the config and calls `run_keys_command`)."""
    keys = sub.add_parser(
        "keys",
        help=help_text,
        description="Virtual keys live in the store (store.url or $SWITCHYARD_DATABASE_URL), "
        "hashed with the keys secret ($SWITCHYARD_KEY_SECRET or keys.secret_file).",
    )
    steps = keys.add_subparsers(dest="keys_command", required=True)
    create = steps.add_parser("create", help="a new key; printed once")
    create.add_argument("--name", required=True)
    create.add_argument("--route", action="append", help="a route it may use (repeatable)")
    create.add_argument("--tag", action="append", default=[], help="a placement tag it requires")
    create.add_argument("--rpm", type=int, help="requests per minute")
    create.add_argument("--tpm", type=int, help="tokens per minute (prompt + max_tokens)")
    create.add_argument("--budget-day", type=float, help="spend limit per UTC day, USD")
    create.add_argument("--budget-month", type=float, help="spend limit per UTC month, USD")
    create.add_argument(
        "--on-exhausted",
        choices=["reject", "fallback"],
        help="when a budget is spent (default: budgets.keys.on_exhausted)",
    )
    create.add_argument("--team")
    create.add_argument("--owner")
    listing = steps.add_parser("list", help="the keys (never their secrets)")
    listing.add_argument("--all", action="store_true", help="revoked ones too")
    listing.add_argument("--json", action="store_true", help="one JSON array")
    rotate = steps.add_parser("rotate", help="a new secret for a key; printed once")
    rotate.add_argument("key_id")
    revoke = steps.add_parser("revoke", help="the key stops working")
    revoke.add_argument("key_id")
    for step in (create, listing, rotate, revoke):
        step.add_argument("--config", help="config YAML (default: the bundled embedded example)")
    return keys


def not_enforced(config: Config) -> str:
    """What `keys create` and `keys rotate` say of a config that would not check the key."""
    return (
        "warning: keys are not enforced by this config (keys.enabled is false): a gateway "
        "serving it checks no virtual key, this one included. To enforce them, set:\n"
        f"  keys: {{enabled: true}}   # with store.url and ${config.keys.secret_env}; "
        "demo traffic then stops"
    )


def run_keys_command(config: Config, args: argparse.Namespace) -> int:
    if args.keys_command in ("create", "rotate") and not config.keys.enabled:
        print(not_enforced(config), file=sys.stderr)
    url = resolve_url(config.store)
    if url is None:
        print("error: no database: set SWITCHYARD_DATABASE_URL or store.url", file=sys.stderr)
        return 2
    try:
        secret = load_server_secret(config.keys.secret_env, config.keys.secret_file)
    except SecretError as exc:
        raise ConfigError("environment", [str(exc)]) from None
    from gateway.store.database import DATABASE_ERRORS, describe_error

    step = _STEPS[args.keys_command]
    try:
        return asyncio.run(_run(config, url, secret, step, args))
    except DATABASE_ERRORS as exc:
        print(f"error: {describe_error(exc, url)}", file=sys.stderr)
        return 1


async def _run(config: Config, url: str, secret: bytes, step: _Step, args: Any) -> int:
    # The store's modules load with the command that uses them, not with the parser.
    from gateway.store import migrate
    from gateway.store.database import make_engine
    from gateway.tenancy.key_admin import KeyAdmin

    timeout_s = config.store.connect_timeout_s
    if config.store.migrate_on_start:
        await migrate.upgrade(url, connect_timeout_s=timeout_s)
    engine = make_engine(url, timeout_s)
    routes = frozenset(route.name for route in config.routes)
    try:
        admin = KeyAdmin(engine, secret, timeout_s=timeout_s, known_routes=routes)
        return await step(admin, args, config)
    finally:
        await engine.dispose()


async def _create(admin: KeyAdmin, args: argparse.Namespace, _: Config) -> int:
    try:
        spec = KeySpec(
            name=args.name,
            routes=args.route,
            tags=args.tag,
            rpm=args.rpm,
            tpm=args.tpm,
            team=args.team,
            owner=args.owner,
            budget_usd_per_day=args.budget_day,
            budget_usd_per_month=args.budget_month,
            budget_on_exhausted=args.on_exhausted,
        )
        row, key = await admin.create(spec)
    except (ValidationError, UnknownRoutes) as exc:
        print(f"error: {_first_problem(exc)}", file=sys.stderr)
        return 2
    _print_secret(row, key, "created")
    return 0


async def _list(admin: KeyAdmin, args: argparse.Namespace, config: Config) -> int:
    rows = await admin.read(include_revoked=args.all)
    spend = await _spend(config, rows)
    if args.json:
        shown = [{**row.public(), "spend": spend.get(row.id)} for row in rows]
        print(orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(
        f"{'id':<17} {'prefix':<18} {'status':<8} {'team':<12} {'rpm':>6} {'tpm':>8} "
        f"{'day $ spent/limit':>19} {'month $ spent/limit':>21}  name"
    )
    for row in rows:
        status = "revoked" if row.revoked_at is not None else "active"
        mine = spend.get(row.id, {})
        print(
            f"{row.id:<17} {shown_prefix(row.prefix):<18} {status:<8} {row.team or '-':<12} "
            f"{row.rpm or '-':>6} {row.tpm or '-':>8} {_budget(mine.get('day')):>19} "
            f"{_budget(mine.get('month')):>21}  {row.name}"
        )
    return 0


async def _spend(config: Config, rows: list[KeyRow]) -> dict[str, dict[str, Any]]:
    """Each key's spend per window, read from Redis with `budgets.backend: redis`; with
    `local`, spend lives in each gateway process only: the limits alone."""
    from gateway.tenancy.wiring import open_budgets

    budgets = open_budgets(config)
    try:
        keys = [(row.id, row.budget_usd_per_day, row.budget_usd_per_month) for row in rows]
        report = await budgets.key_spend(keys)
    finally:
        await budgets.ledger.close()
    if not budgets.ledger.shared:
        for windows in report.values():
            for window in windows.values():
                window["spent_usd"] = None
    return report


def _budget(window: Any) -> str:
    if not window:
        return "-"
    spent, limit = window["spent_usd"], window["limit_usd"]
    if limit is None and not spent:
        return "-"
    shown_spent = "?" if spent is None else f"{spent:.2f}"
    return f"{shown_spent}/{'-' if limit is None else f'{limit:.2f}'}"


async def _rotate(admin: KeyAdmin, args: argparse.Namespace, _: Config) -> int:
    rotated = await admin.rotate(args.key_id)
    if rotated is None:
        print(f"error: no active key {args.key_id!r}", file=sys.stderr)
        return 1
    _print_secret(*rotated, "rotated; the old secret stops working")
    return 0


async def _revoke(admin: KeyAdmin, args: argparse.Namespace, _: Config) -> int:
    row = await admin.revoke(args.key_id)
    if row is None:
        print(f"error: no active key {args.key_id!r}", file=sys.stderr)
        return 1
    print(f"{row.id} revoked")
    return 0


def _print_secret(row: KeyRow, key: str, what: str) -> None:
    print(f"{row.id} ({row.name}) {what}. The key, shown this once:", file=sys.stderr)
    print(key)


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc)


_STEPS: dict[str, _Step] = {
    "create": _create,
    "list": _list,
    "rotate": _rotate,
    "revoke": _revoke,
}

"""The `client_keys` table: virtual keys inserted, read, edited, rotated and revoked.

Plain SQL over an engine the caller owns; every call is bounded by `timeout_s` and raises
the database's errors (`database.DATABASE_ERRORS`) for the caller to report. Hashing, key
generation and the in-memory cache belong to `gateway.tenancy`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.store.database import within
from gateway.store.models import KEYS_TABLE

EDITABLE = frozenset(
    {
        "name",
        "routes",
        "tags",
        "rpm",
        "tpm",
        "team",
        "owner",
        "budget_usd_per_day",
        "budget_usd_per_month",
        "budget_on_exhausted",
    }
)
"""Columns an update may change (the secret changes only by rotation)."""


@dataclass(frozen=True, slots=True)
class KeyRow:
    id: str
    name: str
    prefix: str
    secret_hash: str
    routes: tuple[str, ...] | None
    tags: tuple[str, ...]
    rpm: int | None
    tpm: int | None
    team: str | None
    owner: str | None
    created_at: datetime
    updated_at: datetime
    rotated_at: datetime | None = None
    revoked_at: datetime | None = None
    budget_usd_per_day: float | None = None
    budget_usd_per_month: float | None = None
    budget_on_exhausted: Literal["reject", "fallback"] | None = None

    def public(self) -> dict[str, Any]:
        """What may be shown (admin API, `switchyard keys list`): never the hash."""
        return {
            "id": self.id,
            "name": self.name,
            "prefix": self.prefix,
            "routes": list(self.routes) if self.routes is not None else None,
            "tags": list(self.tags),
            "rpm": self.rpm,
            "tpm": self.tpm,
            "team": self.team,
            "owner": self.owner,
            "budget_usd_per_day": self.budget_usd_per_day,
            "budget_usd_per_month": self.budget_usd_per_month,
            "budget_on_exhausted": self.budget_on_exhausted,
            "created_at": _iso(self.created_at),
            "rotated_at": _iso(self.rotated_at),
            "revoked_at": _iso(self.revoked_at),
            "status": "revoked" if self.revoked_at is not None else "active",
        }


def _iso(at: datetime | None) -> str | None:
    return _aware(at).isoformat() if at is not None else None


def _aware(at: datetime) -> datetime:
    # SQLite hands timezone-aware columns back naive; they were written in UTC.
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _row(row: Row[Any]) -> KeyRow:
    values = row._mapping
    routes = values["routes"]
    return KeyRow(
        id=values["id"],
        name=values["name"],
        prefix=values["prefix"],
        secret_hash=values["secret_hash"],
        routes=tuple(routes) if routes is not None else None,
        tags=tuple(values["tags"] or ()),
        rpm=values["rpm"],
        tpm=values["tpm"],
        team=values["team"],
        owner=values["owner"],
        created_at=_aware(values["created_at"]),
        updated_at=_aware(values["updated_at"]),
        rotated_at=_aware(values["rotated_at"]) if values["rotated_at"] else None,
        revoked_at=_aware(values["revoked_at"]) if values["revoked_at"] else None,
        budget_usd_per_day=values["budget_usd_per_day"],
        budget_usd_per_month=values["budget_usd_per_month"],
        budget_on_exhausted=values["budget_on_exhausted"],
    )


def _values(key: KeyRow) -> dict[str, Any]:
    return {
        "id": key.id,
        "name": key.name,
        "prefix": key.prefix,
        "secret_hash": key.secret_hash,
        "routes": list(key.routes) if key.routes is not None else None,
        "tags": list(key.tags),
        "rpm": key.rpm,
        "tpm": key.tpm,
        "team": key.team,
        "owner": key.owner,
        "created_at": key.created_at,
        "updated_at": key.updated_at,
        "rotated_at": key.rotated_at,
        "revoked_at": key.revoked_at,
        "budget_usd_per_day": key.budget_usd_per_day,
        "budget_usd_per_month": key.budget_usd_per_month,
        "budget_on_exhausted": key.budget_on_exhausted,
    }


async def insert_key(engine: AsyncEngine, key: KeyRow, *, timeout_s: float) -> None:
    """Add a key; raises IntegrityError when its id or prefix is taken."""
    async with engine.begin() as conn:
        await within(timeout_s, conn.execute(KEYS_TABLE.insert(), [_values(key)]))


async def read_keys(
    engine: AsyncEngine, *, active_only: bool, limit: int, timeout_s: float
) -> list[KeyRow]:
    """Keys oldest first, at most `limit`; with `active_only`, the unrevoked ones."""
    query = select(KEYS_TABLE).order_by(KEYS_TABLE.c.created_at, KEYS_TABLE.c.id).limit(limit)
    if active_only:
        query = query.where(KEYS_TABLE.c.revoked_at.is_(None))
    async with engine.connect() as conn:
        result = await within(timeout_s, conn.execute(query))
        return [_row(row) for row in result.all()]


async def read_key(engine: AsyncEngine, key_id: str, *, timeout_s: float) -> KeyRow | None:
    query = select(KEYS_TABLE).where(KEYS_TABLE.c.id == key_id)
    async with engine.connect() as conn:
        row = (await within(timeout_s, conn.execute(query))).first()
    return _row(row) if row is not None else None


async def update_key(
    engine: AsyncEngine, key_id: str, changes: Mapping[str, Any], *, timeout_s: float
) -> KeyRow | None:
    """Apply `changes` (columns of `EDITABLE`, or the rotation and revocation columns) to
    an unrevoked key; the key as it now is, or None when there is no such active key."""
    now = datetime.now(UTC)
    table = KEYS_TABLE
    statement = (
        table.update()
        .where(table.c.id == key_id, table.c.revoked_at.is_(None))
        .values(**changes, updated_at=now)
    )
    async with engine.begin() as conn:
        result = await within(timeout_s, conn.execute(statement))
        if result.rowcount == 0:
            return None
        row = (await conn.execute(select(table).where(table.c.id == key_id))).first()
    return _row(row) if row is not None else None

"""Creating, editing, rotating and revoking virtual keys: shared by `switchyard keys` and
the admin API. The new key is returned once, to be shown once; only its HMAC is stored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.placement import MAX_REQUESTED_TAGS, PlacementTag
from gateway.store.keys import KeyRow, insert_key, read_key, read_keys, update_key
from gateway.tenancy.config import OnExhausted
from gateway.tenancy.key_material import key_prefix, keyed_hash, new_key, new_key_id

_Label = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:@-]+$")
]
_RouteName = Annotated[str, StringConstraints(min_length=1, max_length=128)]
_CREATE_ATTEMPTS = 3
"""A new key's random prefix could, very rarely, be taken: try again this often."""


class KeySpec(BaseModel):
    """What a new key may do, and whose it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=128)
    routes: list[_RouteName] | None = Field(
        None, max_length=256, description="Routes it may use; null: every route."
    )
    tags: list[PlacementTag] = Field(default_factory=list, max_length=MAX_REQUESTED_TAGS)
    rpm: int | None = Field(None, ge=1)
    tpm: int | None = Field(None, ge=1)
    team: _Label | None = None
    owner: str | None = Field(None, min_length=1, max_length=128)
    budget_usd_per_day: float | None = Field(None, gt=0, description="Spend per UTC day.")
    budget_usd_per_month: float | None = Field(None, gt=0, description="Spend per UTC month.")
    budget_on_exhausted: OnExhausted | None = Field(
        None, description="When spent: reject or fallback; null: budgets.keys.on_exhausted."
    )


class KeyChanges(BaseModel):
    """An edit: only the fields given change (`null` clears routes, limits, budgets, team,
    owner)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(None, min_length=1, max_length=128)
    routes: list[_RouteName] | None = Field(None, max_length=256)
    tags: list[PlacementTag] | None = Field(None, max_length=MAX_REQUESTED_TAGS)
    rpm: int | None = Field(None, ge=1)
    tpm: int | None = Field(None, ge=1)
    team: _Label | None = None
    owner: str | None = Field(None, min_length=1, max_length=128)
    budget_usd_per_day: float | None = Field(None, gt=0)
    budget_usd_per_month: float | None = Field(None, gt=0)
    budget_on_exhausted: OnExhausted | None = None

    def columns(self) -> dict[str, Any]:
        given = self.model_dump(exclude_unset=True)
        if given.get("name", "") is None or ("tags" in given and given["tags"] is None):
            raise ValueError("name and tags cannot be null")
        return given


class UnknownRoutes(ValueError):
    pass


class KeyAdmin:
    """Key operations on the store's engine (owned by the caller)."""

    def __init__(
        self,
        engine: AsyncEngine,
        server_secret: bytes,
        *,
        timeout_s: float,
        known_routes: frozenset[str] | None = None,
    ) -> None:
        self._engine = engine
        self._secret = server_secret
        self._timeout_s = timeout_s
        self._routes = known_routes

    async def create(self, spec: KeySpec) -> tuple[KeyRow, str]:
        """The new key's row and the key itself (to show once)."""
        self._check_routes(spec.routes)
        now = datetime.now(UTC)
        for attempt in range(_CREATE_ATTEMPTS):
            key = new_key()
            row = KeyRow(
                id=new_key_id(),
                name=spec.name,
                prefix=_prefix(key),
                secret_hash=keyed_hash(self._secret, key),
                routes=tuple(spec.routes) if spec.routes is not None else None,
                tags=tuple(sorted(set(spec.tags))),
                rpm=spec.rpm,
                tpm=spec.tpm,
                team=spec.team,
                owner=spec.owner,
                budget_usd_per_day=spec.budget_usd_per_day,
                budget_usd_per_month=spec.budget_usd_per_month,
                budget_on_exhausted=spec.budget_on_exhausted,
                created_at=now,
                updated_at=now,
            )
            try:
                await insert_key(self._engine, row, timeout_s=self._timeout_s)
            except IntegrityError:
                if attempt == _CREATE_ATTEMPTS - 1:
                    raise
                continue
            return row, key
        raise AssertionError("unreachable")

    async def read(self, *, include_revoked: bool, limit: int = 10_000) -> list[KeyRow]:
        return await read_keys(
            self._engine, active_only=not include_revoked, limit=limit, timeout_s=self._timeout_s
        )

    async def get(self, key_id: str) -> KeyRow | None:
        return await read_key(self._engine, key_id, timeout_s=self._timeout_s)

    async def change(self, key_id: str, changes: KeyChanges) -> KeyRow | None:
        columns = changes.columns()
        self._check_routes(columns.get("routes"))
        if "tags" in columns:
            columns["tags"] = sorted(set(columns["tags"]))
        return await update_key(self._engine, key_id, columns, timeout_s=self._timeout_s)

    async def rotate(self, key_id: str) -> tuple[KeyRow, str] | None:
        """A new secret (and prefix) for an active key; the old one stops working."""
        key = new_key()
        columns = {
            "prefix": _prefix(key),
            "secret_hash": keyed_hash(self._secret, key),
            "rotated_at": datetime.now(UTC),
        }
        row = await update_key(self._engine, key_id, columns, timeout_s=self._timeout_s)
        return (row, key) if row is not None else None

    async def revoke(self, key_id: str) -> KeyRow | None:
        columns = {"revoked_at": datetime.now(UTC)}
        return await update_key(self._engine, key_id, columns, timeout_s=self._timeout_s)

    def _check_routes(self, routes: list[str] | None) -> None:
        if routes is None or self._routes is None:
            return
        unknown = sorted(set(routes) - self._routes)
        if unknown:
            raise UnknownRoutes(f"routes: unknown route(s) {', '.join(unknown)}")


def _prefix(key: str) -> str:
    prefix = key_prefix(key)
    assert prefix is not None
    return prefix

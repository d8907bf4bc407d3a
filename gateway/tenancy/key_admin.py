"""Creating, editing, rotating and revoking virtual keys: shared by `switchyard keys` and
the admin API. The new key is returned once, to be shown once; only its HMAC is stored."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.store.database import DATABASE_ERRORS
from gateway.store.keys import KeyRow, insert_key, read_key, read_keys, update_key
from gateway.tenancy.key_material import key_prefix, keyed_hash, new_key, new_key_id
from gateway.tenancy.key_specs import KeyChanges, KeySpec, UnknownRoutes

_CREATE_ATTEMPTS = 3
"""A new key's random prefix could, very rarely, be taken: try again this often."""


class KeyAdmin:
    """Key operations on the store's engine (owned by the caller)."""

    store_errors: tuple[type[BaseException], ...] = DATABASE_ERRORS
    """What its operations raise when the store is down, slow or refusing: callers catch
    these without importing the database layer themselves."""

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
        self.known_routes = known_routes
        """The routes a key may name; None: any. The gateway sets its serving config's
        (`Tenancy.follow`)."""

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
        known = self.known_routes
        if routes is None or known is None:
            return
        unknown = sorted(set(routes) - known)
        if unknown:
            raise UnknownRoutes(f"routes: unknown route(s) {', '.join(unknown)}")


def _prefix(key: str) -> str:
    prefix = key_prefix(key)
    assert prefix is not None
    return prefix

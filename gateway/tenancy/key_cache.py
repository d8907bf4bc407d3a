"""Virtual keys in memory: the request path looks keys up here and never in the database.

Loaded when the gateway starts (within `keys.load_timeout_s`), then reloaded whole every
`keys.refresh_s` by a background task, and at once after an admin API change on this
process. A revoked or rotated key stops working at the next reload: within `refresh_s`
plus twice the time one load may take. When the database cannot be read, the last set
loaded keeps serving; the outage and the recovery are logged once each.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from gateway.store.database import DATABASE_ERRORS, describe_error
from gateway.store.keys import KeyRow, read_keys
from gateway.tenancy.caller import Caller
from gateway.tenancy.key_material import key_prefix, keyed_hash, same_hash

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from sqlalchemy.ext.asyncio import AsyncEngine

    from gateway.tenancy.config import KeysConfig

logger = logging.getLogger("switchyard.keys")


@dataclass(frozen=True, slots=True)
class _Entry:
    secret_hash: str
    caller: Caller


def caller_of(row: KeyRow) -> Caller:
    return Caller(
        key_id=row.id,
        kind="virtual",
        name=row.name,
        team=row.team,
        routes=frozenset(row.routes) if row.routes is not None else None,
        tags=frozenset(row.tags),
        rpm=row.rpm,
        tpm=row.tpm,
        budget_usd_per_day=row.budget_usd_per_day,
        budget_usd_per_month=row.budget_usd_per_month,
        budget_on_exhausted=row.budget_on_exhausted,
    )


class KeyCache:
    """The active virtual keys by public prefix; see the module docstring."""

    def __init__(
        self,
        engine: AsyncEngine,
        server_secret: bytes,
        config: KeysConfig,
        *,
        url: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._engine = engine
        self._secret = server_secret
        self._config = config
        self._url = url
        self._clock = clock
        self._keys: Mapping[str, _Entry] = MappingProxyType({})
        self._loaded_at: float | None = None
        self._up: bool | None = None
        self._last_error = ""
        self._truncated = False

    def lookup(self, token: str) -> Caller | None:
        """The active key `token` is, or None. Constant-time in the secret part."""
        prefix = key_prefix(token)
        entry = self._keys.get(prefix) if prefix is not None else None
        if entry is None or not same_hash(entry.secret_hash, keyed_hash(self._secret, token)):
            return None
        return entry.caller

    def __len__(self) -> int:
        return len(self._keys)

    async def refresh(self) -> bool:
        """Reload every active key; False (the last set kept) when the database failed."""
        limit = self._config.max_keys
        try:
            rows = await read_keys(
                self._engine,
                active_only=True,
                limit=limit + 1,
                timeout_s=self._config.load_timeout_s,
            )
        except DATABASE_ERRORS as exc:
            self._went_down(describe_error(exc, self._url))
            return False
        if len(rows) > limit and not self._truncated:
            logger.error("keys: more than keys.max_keys=%d active keys; the newest ignored", limit)
        self._truncated = len(rows) > limit
        keys = {row.prefix: _Entry(row.secret_hash, caller_of(row)) for row in rows[:limit]}
        self._keys = MappingProxyType(keys)  # one swap: a lookup sees the old or the new set
        self._loaded_at = self._clock()
        if self._up is False:
            logger.warning("keys: database reachable again; %d active keys loaded", len(keys))
        self._up, self._last_error = True, ""
        return True

    async def run(self) -> None:
        """Reload every `refresh_s` until cancelled."""
        while True:
            await asyncio.sleep(self._config.refresh_s)
            await self.refresh()

    def status(self) -> dict[str, object]:
        age = self._clock() - self._loaded_at if self._loaded_at is not None else None
        return {
            "keys": len(self._keys),
            "database_up": self._up is True,
            "loaded_age_s": round(age, 3) if age is not None else None,
            "refresh_s": self._config.refresh_s,
            "last_error": self._last_error,
        }

    def _went_down(self, error: str) -> None:
        self._last_error = error
        if self._up is not False:
            logger.warning(
                "keys: cannot read the key table (%s); serving the last %d keys loaded",
                error,
                len(self._keys),
            )
        self._up = False

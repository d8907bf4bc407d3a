"""Virtual keys in the store and in the cache in front of it (SQLite, and PostgreSQL)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.store.database import make_engine
from gateway.store.migrate import downgrade, upgrade
from gateway.tenancy.config import KeysConfig
from gateway.tenancy.key_admin import KeyAdmin
from gateway.tenancy.key_cache import KeyCache
from gateway.tenancy.key_specs import KeyChanges, KeySpec, UnknownRoutes

SECRET = b"a-server-secret-of-enough-length"


@pytest.fixture
async def engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    await upgrade(db_url)
    made = make_engine(db_url, 5.0)
    yield made
    await made.dispose()


def parts(engine: AsyncEngine) -> tuple[KeyAdmin, KeyCache]:
    admin = KeyAdmin(engine, SECRET, timeout_s=5, known_routes=frozenset({"default", "big"}))
    return admin, KeyCache(engine, SECRET, KeysConfig(enabled=True))


async def test_a_created_key_is_found_with_its_rules(engine: AsyncEngine) -> None:
    admin, cache = parts(engine)
    spec = KeySpec(name="search", routes=["default"], tags=["eu"], rpm=5, team="search")
    row, key = await admin.create(spec)
    assert cache.lookup(key) is None  # not loaded yet
    assert await cache.refresh()
    caller = cache.lookup(key)
    assert caller is not None
    assert (caller.key_id, caller.team, caller.rpm) == (row.id, "search", 5)
    assert caller.routes == frozenset({"default"}) and caller.tags == frozenset({"eu"})
    assert cache.lookup(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert key not in str(row.public()) and row.secret_hash not in str(row.public())


async def test_rotation_and_revocation_take_effect_at_the_next_refresh(
    engine: AsyncEngine,
) -> None:
    admin, cache = parts(engine)
    row, old = await admin.create(KeySpec(name="a"))
    await cache.refresh()
    rotated = await admin.rotate(row.id)
    assert rotated is not None
    new_row, new = rotated
    assert new_row.id == row.id and new_row.rotated_at is not None
    assert cache.lookup(old) is not None  # until the refresh
    await cache.refresh()
    assert cache.lookup(old) is None and cache.lookup(new) is not None
    revoked = await admin.revoke(row.id)
    assert revoked is not None and revoked.public()["status"] == "revoked"
    await cache.refresh()
    assert cache.lookup(new) is None
    assert await admin.revoke(row.id) is None  # already revoked
    assert [r.id for r in await admin.read(include_revoked=True)] == [row.id]
    assert await admin.read(include_revoked=False) == []


async def test_edits_change_only_what_is_given(engine: AsyncEngine) -> None:
    admin, _ = parts(engine)
    row, _ = await admin.create(KeySpec(name="a", rpm=5, owner="ann"))
    changed = await admin.change(row.id, KeyChanges(tpm=100, routes=["big"]))
    assert changed is not None
    assert (changed.rpm, changed.tpm, changed.routes, changed.owner) == (5, 100, ("big",), "ann")
    with pytest.raises(UnknownRoutes):
        await admin.change(row.id, KeyChanges(routes=["nope"]))
    with pytest.raises(UnknownRoutes):
        await admin.create(KeySpec(name="b", routes=["nope"]))


async def test_without_its_database_the_cache_keeps_the_last_keys_and_says_so_once(
    engine: AsyncEngine, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    admin, cache = parts(engine)
    _, key = await admin.create(KeySpec(name="a"))
    await cache.refresh()
    await downgrade(db_url, "0001")  # the table is gone: every read fails
    with caplog.at_level(logging.WARNING, "switchyard.keys"):
        assert not await cache.refresh()
        assert not await cache.refresh()
    assert cache.lookup(key) is not None
    assert cache.status()["database_up"] is False
    lines = [r.getMessage() for r in caplog.records if r.name == "switchyard.keys"]
    assert len(lines) == 1 and "serving the last 1 keys loaded" in lines[0]
    await upgrade(db_url)
    with caplog.at_level(logging.WARNING, "switchyard.keys"):
        assert await cache.refresh()
    assert "reachable again" in caplog.records[-1].getMessage()
    assert cache.lookup(key) is None  # the table came back empty


async def test_the_cache_holds_at_most_max_keys(engine: AsyncEngine) -> None:
    admin, _ = parts(engine)
    keys = [(await admin.create(KeySpec(name=f"k{i}")))[1] for i in range(3)]
    cache = KeyCache(engine, SECRET, KeysConfig(enabled=True, max_keys=2))
    await cache.refresh()
    assert len(cache) == 2
    assert [cache.lookup(key) is not None for key in keys] == [True, True, False]

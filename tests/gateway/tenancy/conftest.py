"""The store's database fixtures (a SQLite file, a throwaway PostgreSQL database), and a
Redis key namespace of each test's own on the machine's Redis, deleted after it."""

import secrets
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from tests.gateway.store.conftest import db_url, postgres_url, sqlite_url

__all__ = ["REDIS_URL", "db_url", "postgres_url", "sqlite_url"]

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
async def namespace() -> AsyncIterator[str]:
    name = f"sy-test-{secrets.token_hex(6)}"
    yield name
    client = Redis.from_url(REDIS_URL)
    try:
        found = [key async for key in client.scan_iter(match=f"{name}:*")]
        if found:
            await client.delete(*found)
    finally:
        await client.aclose()

"""Fixtures of the fleet tests that use the machine's Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError

SHARED_REDIS = "redis://127.0.0.1:6379/0"
"""The machine's Redis; each test works in a namespace of its own, deleted after it."""


@pytest.fixture
async def namespace() -> AsyncIterator[str]:
    client = Redis.from_url(SHARED_REDIS)
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        pytest.fail(f"these tests need the machine's Redis at {SHARED_REDIS}: {exc}")
    name = f"switchyard-test-{uuid.uuid4().hex[:12]}"
    yield name
    keys = [key async for key in client.scan_iter(match=f"{name}:*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()

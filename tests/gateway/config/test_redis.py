"""One way to reach Redis: which Redis each user resolves from the YAML (the fall-back order
budgets → limits → state), the section keys shared by limits and budgets, and the one
client opener with its bounds, against the machine's Redis."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from gateway.config.redis import RedisSettings, open_redis
from gateway.config.root import Config, StateConfig, parse_config
from gateway.errors import ConfigError
from gateway.fleet.state import FleetState
from gateway.fleet.sync.redis_sync import RedisFleetSync
from gateway.prefix.index import CacheSpec, PrefixIndex
from gateway.tenancy.budgets.redis_counters import RedisSpend
from gateway.tenancy.redis_buckets import RedisBuckets
from tests.conftest import make_config

REDIS_URL = "redis://127.0.0.1:6379/0"
STATE, LIMITS, BUDGETS = "redis://state:6379/0", "redis://limits:6379/0", "redis://budgets:6379/0"


def config(**sections: Any) -> Config:
    return parse_config(make_config({"a": "http://127.0.0.1:9/v1"}, **sections))


@pytest.mark.parametrize(
    ("limits_url", "budgets_url", "expected"),
    [
        pytest.param(None, None, {"limits": STATE, "budgets": STATE}, id="all-from-state"),
        pytest.param(LIMITS, None, {"limits": LIMITS, "budgets": LIMITS}, id="budgets-use-limits"),
        pytest.param(None, BUDGETS, {"limits": STATE, "budgets": BUDGETS}, id="own-budgets"),
        pytest.param(LIMITS, BUDGETS, {"limits": LIMITS, "budgets": BUDGETS}, id="each-its-own"),
    ],
)
def test_a_section_without_a_url_uses_the_next_along_budgets_limits_state(
    limits_url: str | None, budgets_url: str | None, expected: dict[str, str]
) -> None:
    parsed = config(
        state={"redis_url": STATE, "namespace": "s", "command_timeout_ms": 700},
        limits={"redis_url": limits_url, "namespace": "l", "timeout_ms": 40},
        budgets={"redis_url": budgets_url, "namespace": "b", "timeout_ms": 30},
    )
    assert parsed.redis_for("state") == RedisSettings(url=STATE, namespace="s", timeout_ms=700)
    assert parsed.redis_for("limits") == RedisSettings(
        url=expected["limits"], namespace="l", timeout_ms=40
    )
    assert parsed.redis_for("budgets") == RedisSettings(
        url=expected["budgets"], namespace="b", timeout_ms=30
    )


def test_the_defaults_are_one_local_redis_under_one_namespace() -> None:
    parsed = config()
    for settings in (parsed.redis_for(s) for s in ("state", "limits", "budgets")):
        assert (settings.url, settings.namespace) == (REDIS_URL, "switchyard")
    assert (parsed.limits.backend, parsed.budgets.backend) == ("local", "local")
    assert (parsed.limits.timeout_ms, parsed.budgets.retry_redis_s) == (50.0, 5.0)


EVERY_USER = ("state", "limits", "budgets")
SHARED_KEY_PROBLEMS = [
    ("redis_url", "http://127.0.0.1:6379", "String should match pattern", EVERY_USER),
    ("namespace", "a b", "String should match pattern", EVERY_USER),
    ("namespace", "", "String should have at least 1 character", EVERY_USER),
    ("timeout_ms", 0, "Input should be greater than 0", ("limits", "budgets")),
    ("timeout_ms", 5001, "Input should be less than or equal to 5000", ("limits", "budgets")),
    ("retry_redis_s", 0, "Input should be greater than 0", ("limits", "budgets")),
    ("backend", "memcached", "Input should be 'local' or 'redis'", ("limits", "budgets")),
]


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        pytest.param(section, key, value, message, id=f"{section}.{key}={value!r}")
        for key, value, message, sections in SHARED_KEY_PROBLEMS
        for section in sections
    ],
)
def test_the_sections_check_the_redis_keys_they_share_alike(
    section: str, key: str, value: object, message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        config(**{section: {key: value}})
    assert f"{section}.{key}: {message}" in str(raised.value)


def _limits_client(settings: RedisSettings) -> Redis:
    return RedisBuckets(settings)._client


def _budgets_client(settings: RedisSettings) -> Redis:
    return RedisSpend(settings)._client


def _sync_client(settings: RedisSettings) -> Redis:
    state_config = StateConfig(
        backend="redis",
        redis_url=settings.url,
        namespace=settings.namespace,
        command_timeout_ms=settings.timeout_ms,
    )
    parsed = config(state=state_config.model_dump())
    state = FleetState(parsed.backends, parsed.health)
    sync = RedisFleetSync(parsed.state, state, PrefixIndex({"a": CacheSpec(1000, 60.0)}))
    return sync._open()


@pytest.mark.parametrize(
    ("open_client", "connections", "ping_idle_s"),
    [
        pytest.param(_limits_client, 64, 0, id="rate-limits"),
        pytest.param(_budgets_client, 16, 0, id="budgets"),
        pytest.param(_sync_client, 2, 5, id="fleet-sync"),
    ],
)
async def test_every_user_opens_a_bounded_client(
    open_client: Callable[[RedisSettings], Redis], connections: int, ping_idle_s: float
) -> None:
    client = open_client(RedisSettings(url=REDIS_URL, namespace="sy-test", timeout_ms=250))
    pool = client.connection_pool
    kwargs = pool.connection_kwargs
    try:
        assert (pool.max_connections, getattr(pool, "timeout", None)) == (connections, 0.25)
        assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (0.25, 0.25)
        assert kwargs["health_check_interval"] == ping_idle_s
        assert kwargs["socket_keepalive"] is True
        assert kwargs["retry"].get_retries() == 0, "each user falls back or backs off itself"
    finally:
        await client.aclose()


async def test_a_caller_waits_for_a_free_connection_at_most_the_timeout() -> None:
    client = open_redis(
        RedisSettings(url=REDIS_URL, namespace="sy-test", timeout_ms=200), max_connections=1
    )
    try:
        assert await client.ping()
        held = await client.connection_pool.get_connection()
        started = asyncio.get_running_loop().time()
        with pytest.raises(RedisConnectionError):
            await client.ping()
        assert 0.15 < asyncio.get_running_loop().time() - started < 1.0
        await client.connection_pool.release(held)
        assert await client.ping()
    finally:
        await client.aclose()


async def test_closing_the_client_closes_its_connections() -> None:
    client = open_redis(
        RedisSettings(url=REDIS_URL, namespace="sy-test", timeout_ms=500), max_connections=4
    )
    connection = await client.connection_pool.get_connection()
    await client.connection_pool.release(connection)
    assert connection.is_connected
    await client.aclose()
    assert not connection.is_connected


def test_loading_the_config_does_not_load_redis() -> None:
    """redis-py is imported when a client is opened, not by every command that reads the
    config (it takes a tenth of a second)."""
    root = Path(__file__).resolve().parents[3]
    code = "import sys, gateway.config.root; print('redis' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONSAFEPATH": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "False"

"""Tenancy's parts built from the config and started with the gateway: the authenticator
(static, virtual and admin keys, the metrics token), the key cache and its refresh task,
the key admin, the rate limiter, and budgets with their accounting task. Virtual keys live
in the store: their modules, and the database layer under them, are imported only when
the config enables them."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.config.root import Config
from gateway.errors import ConfigError
from gateway.process.tasks import start_task
from gateway.store.config import resolve_url
from gateway.tenancy.auth import Authenticator, AuthSettingsError, env_keys, exposure_problem
from gateway.tenancy.budgets.ledger import SpendLedger
from gateway.tenancy.budgets.redis_counters import RedisSpend
from gateway.tenancy.budgets.spend_limits import Budgets
from gateway.tenancy.key_material import SecretError, load_server_secret
from gateway.tenancy.limiter import RateLimiter
from gateway.tenancy.redis_buckets import RedisBuckets

if TYPE_CHECKING:
    from contextlib import AsyncExitStack

    from gateway.tenancy.key_admin import KeyAdmin
    from gateway.tenancy.key_cache import KeyCache

logger = logging.getLogger("switchyard.keys")


@dataclass
class Tenancy:
    auth: Authenticator
    limiter: RateLimiter
    budgets: Budgets
    cache: KeyCache | None = None
    admin: KeyAdmin | None = None

    def follow(self, config: Config) -> None:
        """Serve `config`'s routes from now on (a reload's): new and edited keys may name
        them."""
        if self.admin is not None:
            self.admin.known_routes = frozenset(route.name for route in config.routes)

    def status(self) -> dict[str, object]:
        keys = self.cache.status() if self.cache is not None else {"enabled": False}
        return {"keys": keys, "limits": self.limiter.status(), "budgets": self.budgets.status()}


@dataclass(frozen=True)
class _Settings:
    static_keys: frozenset[str]
    admin_keys: frozenset[str]
    metrics_token: str | None
    store_url: str | None
    secret: bytes | None


def read_settings(config: Config) -> _Settings:
    """Every key, token and secret the config names, read from the environment or files;
    ConfigError naming every setting that is unusable, all at once (never a value)."""
    server = config.server
    problems: list[str] = []
    static = _env_keys(server.api_keys_env, "server.api_keys_env", problems)
    admins = _env_keys(server.admin_keys_env, "server.admin_keys_env", problems)
    tokens = _env_keys(server.metrics_token_env, "server.metrics_token_env", problems)
    if len(tokens) > 1:
        problems.append("server.metrics_token_env: one token, no commas")
    url = secret = None
    if config.keys.enabled:
        try:
            url = resolve_url(config.store)
        except ConfigError as exc:
            problems += exc.problems
        else:
            if url is None:
                problems.append("keys.enabled: needs store.url (or the env var)")
        try:
            secret = load_server_secret(config.keys.secret_env, config.keys.secret_file)
        except SecretError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError("environment", problems)
    token = next(iter(tokens), None)
    return _Settings(static, admins, token, url, secret)


def _env_keys(env_name: str | None, setting: str, problems: list[str]) -> frozenset[str]:
    """`env_keys`, its problem added to `problems` instead of raised."""
    try:
        return env_keys(env_name, setting)
    except AuthSettingsError as exc:
        problems.append(str(exc))
        return frozenset()


def check_exposure(config: Config, host: str) -> None:
    """ConfigError when serving on `host` would expose the backends without keys."""
    problem = exposure_problem(host, config.clients_need_keys, config.server.allow_unauthenticated)
    if problem is not None:
        raise ConfigError("<config>", [problem])


def open_tenancy(config: Config, stack: AsyncExitStack) -> Tenancy:
    """Build the parts; what holds connections is closed when `stack` closes."""
    settings = read_settings(config)
    cache = admin = None
    if settings.store_url is not None and settings.secret is not None:
        from gateway.store.database import make_engine
        from gateway.tenancy.key_admin import KeyAdmin
        from gateway.tenancy.key_cache import KeyCache

        engine = make_engine(settings.store_url, config.keys.load_timeout_s)
        stack.push_async_callback(engine.dispose)
        cache = KeyCache(engine, settings.secret, config.keys, url=settings.store_url)
        routes = frozenset(route.name for route in config.routes)
        timeout_s = config.keys.load_timeout_s
        admin = KeyAdmin(engine, settings.secret, timeout_s=timeout_s, known_routes=routes)
    auth = Authenticator(
        settings.static_keys,
        settings.admin_keys,
        cache=cache,
        metrics_token=settings.metrics_token,
    )
    limits = config.limits
    redis = RedisBuckets(config.redis_for("limits")) if limits.backend == "redis" else None
    limiter = RateLimiter(limits, redis)
    stack.push_async_callback(limiter.close)
    budgets = open_budgets(config)
    stack.push_async_callback(budgets.ledger.close)
    return Tenancy(auth, limiter, budgets, cache, admin)


def open_budgets(config: Config) -> Budgets:
    """The budgets and their ledger: in Redis with `budgets.backend: redis`."""
    settings = config.budgets
    redis = RedisSpend(config.redis_for("budgets")) if settings.backend == "redis" else None
    return Budgets(settings, SpendLedger(settings, redis), clock=time.time)


async def start_tenancy(tenancy: Tenancy, stack: AsyncExitStack) -> None:
    """The first load of the keys (bounded by `keys.load_timeout_s`), then its refresh;
    the budgets' accounting task."""
    start_task(stack, tenancy.budgets.run(), name="budget-accounting")
    cache = tenancy.cache
    if cache is None:
        return
    if await cache.refresh():
        logger.info("keys: %d active virtual keys loaded", len(cache))
    start_task(stack, cache.run(), name="key-refresh")

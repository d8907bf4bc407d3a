"""Who may call what: client keys (static ones from an environment variable, virtual ones
from the key cache), admin keys, and the `/metrics` token.

Static and admin keys are looked up by their HMAC under a random per-process key, so a
lookup's timing depends only on digests a caller cannot compute; virtual keys are found
by their public prefix and checked by constant-time comparison (`key_cache.py`), the
metrics token by `hmac.compare_digest`.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
from typing import TYPE_CHECKING

from gateway.errors import Forbidden, Unauthorized
from gateway.tenancy.caller import Caller

if TYPE_CHECKING:
    from collections.abc import Iterable

    from gateway.tenancy.key_cache import KeyCache


class AuthSettingsError(ValueError):
    """A key variable that is named but empty; the message names the setting."""


def static_key_id(key: str) -> str:
    """A short id that tells static keys apart in records without revealing them."""
    return hashlib.blake2b(key.encode(), digest_size=6, person=b"switchyard-key").hexdigest()


def env_keys(env_name: str | None, setting: str) -> frozenset[str]:
    """The comma-separated keys of `env_name`; empty when no variable is named. Raises
    when one is named but unset or empty: failing open would expose every backend."""
    if not env_name:
        return frozenset()
    keys = frozenset(k.strip() for k in os.environ.get(env_name, "").split(",") if k.strip())
    if not keys:
        raise AuthSettingsError(f"{setting}: {env_name} is unset or empty")
    return keys


def bearer(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class Authenticator:
    """Checks an Authorization header's value; holds digests, never the keys."""

    def __init__(
        self,
        static_keys: Iterable[str] = (),
        admin_keys: Iterable[str] = (),
        *,
        cache: KeyCache | None = None,
        metrics_token: str | None = None,
    ) -> None:
        self._lookup_key = os.urandom(32)
        self._static = {self._digest(k): Caller(static_key_id(k), "static") for k in static_keys}
        self._admin = {self._digest(k): Caller(static_key_id(k), "admin") for k in admin_keys}
        self._cache = cache
        self._metrics = self._digest(metrics_token) if metrics_token else None

    @property
    def clients_need_keys(self) -> bool:
        return bool(self._static) or self._cache is not None

    @property
    def has_admin_keys(self) -> bool:
        return bool(self._admin)

    @property
    def metrics_need_token(self) -> bool:
        return self._metrics is not None

    def client(self, authorization: str | None) -> Caller | None:
        """The caller, or None when client auth is off; raises Unauthorized."""
        if not self.clients_need_keys:
            return None
        caller = self._client(bearer(authorization))
        if caller is None:
            raise Unauthorized("missing or invalid API key for this gateway")
        return caller

    def operator(self, authorization: str | None) -> Caller | None:
        """For the decisions, dashboard data and state endpoints: an admin key when admin
        keys are configured, else whatever the proxy accepts."""
        if not self._admin:
            return self.client(authorization)
        return self._admin_caller(authorization)

    def admin(self, authorization: str | None) -> Caller:
        """For the admin API: an admin key, always."""
        if not self._admin:
            raise Forbidden("the admin API is off: set server.admin_keys_env")
        return self._admin_caller(authorization)

    def metrics(self, authorization: str | None) -> None:
        if self._metrics is None:
            return
        token = bearer(authorization)
        if token is None or not hmac.compare_digest(self._digest(token), self._metrics):
            raise Unauthorized("missing or invalid metrics token")

    def _admin_caller(self, authorization: str | None) -> Caller:
        token = bearer(authorization)
        caller = self._admin.get(self._digest(token)) if token is not None else None
        if caller is not None:
            return caller
        if self._client(token) is not None:
            raise Forbidden("this key is not an admin key")
        raise Unauthorized("missing or invalid admin key")

    def _client(self, token: str | None) -> Caller | None:
        if token is None:
            return None
        found = self._static.get(self._digest(token))
        if found is None and self._cache is not None:
            found = self._cache.lookup(token)
        return found

    def _digest(self, key: str) -> bytes:
        return hmac.new(self._lookup_key, key.encode(), hashlib.sha256).digest()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_problem(host: str, clients_need_keys: bool, allow_unauthenticated: bool) -> str | None:
    """Why serving on `host` must not start, or None: a non-loopback address without client
    keys serves every backend to anyone who can reach it."""
    if clients_need_keys or allow_unauthenticated or is_loopback(host):
        return None
    return (
        f"server.host: {host} is not a loopback address and no client keys are configured; "
        "set server.api_keys_env or keys.enabled, or server.allow_unauthenticated: true"
    )

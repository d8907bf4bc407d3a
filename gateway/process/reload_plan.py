"""What a config reload changes: backends and routes added, removed, changed or unchanged,
and the settings only a restart can apply.

Pure comparison of two validated configs; `gateway.process.runtime` acts on it. A backend is
unchanged when its whole `backends` entry is equal: only then are its provider (HTTP
session, emulated engine) and its live state (load, health, prefix index) carried over.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from gateway.config.root import Config

RESTART_ONLY_SECTIONS = (
    "state", "quality", "store", "telemetry", "keys", "limits", "budgets", "demo",
)  # fmt: skip
"""Sections read once at start-up by parts that live as long as the process (the Redis
sync's settings, the quality book, the record store, telemetry and its metrics, the key
cache and rate limiter, the budgets' ledger, the demo traffic)."""
RESTART_ONLY_SERVER_KEYS = (
    "host",
    "port",
    "keep_alive_s",
    "clients",
    "decision_ring_size",
    "log_queue_size",
    "api_keys_env",
    "admin_keys_env",
    "metrics_token_env",
    "allow_unauthenticated",
    "gc_gen0_threshold",
    "gc_freeze",
)
"""`server` keys a running process cannot apply: the socket is bound, the HTTP server holds
the client connections' bounds, keys were read from the environment, the ring and the log
queue are sized, the collector was tuned at start. `max_body_bytes` and `shutdown_drain_s`
reload."""


class _Named(Protocol):
    @property
    def name(self) -> str: ...


@dataclass(frozen=True, slots=True)
class SectionChanges:
    """Names in a list section (backends, routes), by what a reload does to them."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]

    @property
    def moved(self) -> bool:
        """Whether any name was added, removed or changed."""
        return bool(self.added or self.removed or self.changed)

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": list(self.changed),
            "unchanged": list(self.unchanged),
        }

    def describe(self) -> str:
        parts = [
            f"{len(names)} {what}"
            for what, names in (
                ("added", self.added),
                ("removed", self.removed),
                ("changed", self.changed),
                ("unchanged", self.unchanged),
            )
            if names
        ]
        return ", ".join(parts) or "none"


@dataclass(frozen=True, slots=True)
class ConfigChanges:
    backends: SectionChanges
    routes: SectionChanges
    restart_only: tuple[str, ...]
    """YAML paths whose new value a reload cannot apply; a reload with any is refused."""

    def as_dict(self) -> dict[str, object]:
        return {"backends": self.backends.as_dict(), "routes": self.routes.as_dict()}

    def needing_restart(self, paths: Sequence[str]) -> ConfigChanges:
        """These changes with `paths` among those only a restart can apply."""
        return replace(self, restart_only=(*self.restart_only, *paths))

    def describe(self) -> str:
        return f"backends: {self.backends.describe()}; routes: {self.routes.describe()}"


def compare(old: Config, new: Config) -> ConfigChanges:
    return ConfigChanges(
        backends=_section(old.backends, new.backends),
        routes=_section(old.routes, new.routes),
        restart_only=restart_only_changes(old, new),
    )


def restart_only_changes(old: Config, new: Config) -> tuple[str, ...]:
    paths = [
        f"server.{key}"
        for key in RESTART_ONLY_SERVER_KEYS
        if getattr(old.server, key) != getattr(new.server, key)
    ]
    paths += [s for s in RESTART_ONLY_SECTIONS if getattr(old, s) != getattr(new, s)]
    return tuple(paths)


def discovery_paths(config: Config) -> tuple[str, ...]:
    """The `discover` blocks of `config`: in a process started without any, only a restart
    starts the loop that follows them (`gateway.discovery.refresh`)."""
    return tuple(f"backends.{i}.discover" for i, b in enumerate(config.backends) if b.discover)


def _section(old: Sequence[_Named], new: Sequence[_Named]) -> SectionChanges:
    before = {item.name: item for item in old}
    after = {item.name: item for item in new}
    kept = [name for name in after if name in before]
    return SectionChanges(
        added=tuple(name for name in after if name not in before),
        removed=tuple(name for name in before if name not in after),
        changed=tuple(name for name in kept if before[name] != after[name]),
        unchanged=tuple(name for name in kept if before[name] == after[name]),
    )


def kept_cache_groups(old: Config, new: Config, unchanged: Sequence[str]) -> tuple[str, ...]:
    """Prefix-index groups (a cache `key`, else the backend's name) whose entries stay true:
    the same backends hold them before and after, each unchanged."""
    same = set(unchanged)

    def members(config: Config) -> dict[str, set[str]]:
        groups: dict[str, set[str]] = {}
        for b in config.backends:
            groups.setdefault(b.cache.key or b.name, set()).add(b.name)
        return groups

    before, after = members(old), members(new)
    return tuple(
        group for group, names in after.items() if before.get(group) == names and names <= same
    )

"""The process's discovery: what each discovering entry resolved last, and the loop that
resolves each again every `interval_s` and has the runtime follow a change.

Process-wide, shared by the generations it makes: a reload of the file keeps each entry's
addresses while its query (name, record, nameservers) stays the same. A change is applied
by the runtime (`Follower.follow_discovery`) the way a reload applies a file, with the
expanded config (`expand.py`): nothing here touches a generation. With several workers or
replicas, each resolves on its own.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.config.backends import BackendConfig
from gateway.config.root import Config
from gateway.discovery.config import DiscoverConfig
from gateway.discovery.expand import Address, backend_name, cap, expand, port_of
from gateway.errors import NotReloading, SwitchyardError

logger = logging.getLogger("switchyard")

Query = tuple[str, str, tuple[str, ...]]
Lookup = Callable[[DiscoverConfig], Awaitable[tuple[Address, ...]]]
"""Every address a `discover` block's name has now (`resolver.DnsLookup`); raises
`LookupFailed` when there is no answer to trust."""
MAX_IDLE_S = 1.0
"""The loop looks at least this often whether an entry is due: one a reload added is
resolved within about a second."""


class LookupFailed(Exception):
    """No answer to trust (a timeout, SERVFAIL, no nameserver answering): the last known
    addresses stay."""


class Follower(Protocol):
    """The runtime, as the loop sees it: the config as written, and applying the
    addresses found now."""

    @property
    def source(self) -> Config: ...

    async def follow_discovery(self) -> object: ...


@dataclass(slots=True)
class _Entry:
    """One discovering entry's last answer."""

    query: Query
    addresses: tuple[Address, ...] = ()
    """The addresses in use, at most `max_backends`."""
    found: int = 0
    """How many the last answer had."""
    resolved_at: float | None = None
    """Wall time of the last answer."""
    error: str | None = None
    """Why the last lookup failed; None after an answer."""
    failed_at: float | None = None
    due: float = 0.0
    """Clock time of the next lookup."""
    missed: dict[Address, int] = field(default_factory=dict)
    """Addresses in use that the last answers lacked: how many answers in a row."""

    def remembered(self, found: tuple[Address, ...], remove_after: int) -> tuple[Address, ...]:
        """`found`, and the addresses in use that fewer than `remove_after` answers in a
        row have lacked (bounded: only addresses in use are counted)."""
        answered = set(found)
        missed = {
            address: self.missed.get(address, 0) + 1
            for address in self.addresses
            if address not in answered
        }
        self.missed = {address: n for address, n in missed.items() if n < remove_after}
        return (*found, *self.missed)


class Discovery:
    def __init__(
        self,
        lookup: Lookup,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._lookup = lookup
        self._clock = clock
        self._wall = wall
        self._entries: dict[str, _Entry] = {}
        self._staged: dict[tuple[str, Query], _Entry] = {}
        """Answers `prepare` looked up for a config not served yet (a reload's), by entry
        and query; adopted by `_entry` once the loop follows that config. Only the last
        `prepare`'s: bounded by one config's entries."""

    def expand(self, source: Config) -> Config:
        """`source` with every discovering entry expanded to the addresses it has now."""
        return expand(source, {entry.name: self._addresses(entry) for entry in _of(source)})

    def _addresses(self, entry: BackendConfig) -> tuple[Address, ...]:
        """The addresses in use, within the entry's bound as written now (a reload may
        have lowered it since the last answer)."""
        discover = entry.discover
        assert discover is not None
        known = self._known(entry)
        return () if known is None else known.addresses[: discover.max_backends]

    def _known(self, entry: BackendConfig) -> _Entry | None:
        """The last answer to `entry`'s query: the loop's, else one `prepare` staged."""
        assert entry.discover is not None
        query = entry.discover.query
        known = self._entries.get(entry.name)
        if known is not None and known.query == query:
            return known
        return self._staged.get((entry.name, query))

    async def prepare(self, source: Config) -> None:
        """Look up, now, each entry of `source` without an answer to its query yet (one a
        reload adds, or points at another name, record or nameservers), so that applying
        `source` serves its addresses at once instead of none until the loop's next
        lookup. The answers are staged apart from the entries the loop follows (it may
        still follow the config served now) and adopted when it follows `source`."""
        staged: dict[tuple[str, Query], _Entry] = {}
        todo: list[tuple[BackendConfig, _Entry]] = []
        for entry in _of(source):
            assert entry.discover is not None
            known = self._entries.get(entry.name)
            if known is not None and known.query == entry.discover.query:
                continue
            state = staged[(entry.name, entry.discover.query)] = _Entry(entry.discover.query)
            todo.append((entry, state))
        await asyncio.gather(*(self._resolve(entry, state) for entry, state in todo))
        self._staged = staged

    async def refresh(self, source: Config) -> bool:
        """Look up each entry of `source` that is due; whether an entry's addresses
        changed. Entries `source` no longer has are forgotten."""
        entries = _of(source)
        for gone in self._entries.keys() - {entry.name for entry in entries}:
            del self._entries[gone]
        now = self._clock()
        due = [e for e in entries if self._entry(e).due <= now]
        changed = await asyncio.gather(*(self._refresh_one(entry) for entry in due))
        return any(changed)

    def _entry(self, entry: BackendConfig) -> _Entry:
        """Its state; afresh when its query changed (the old answers are not its own)."""
        assert entry.discover is not None
        known = self._entries.get(entry.name)
        query = entry.discover.query
        if known is None or known.query != query:
            staged = self._staged.pop((entry.name, query), None)
            known = self._entries[entry.name] = staged or _Entry(query)
        return known

    async def _refresh_one(self, entry: BackendConfig) -> bool:
        return await self._resolve(entry, self._entry(entry))

    async def _resolve(self, entry: BackendConfig, state: _Entry) -> bool:
        """Look `entry` up into `state`; whether its addresses changed."""
        discover = entry.discover
        assert discover is not None
        state.due = self._clock() + discover.interval_s
        try:
            found = await self._lookup(discover)
        except LookupFailed as exc:
            if state.error != str(exc):
                logger.warning(
                    "discovery: %s: lookup of %s failed, its %d backends stay: %s",
                    entry.name, discover.dns, len(state.addresses), exc,
                )  # fmt: skip
            state.error, state.failed_at = str(exc), self._wall()
            return False
        found = state.remembered(found, discover.remove_after)
        used = cap(state.addresses, found, discover.max_backends)
        changed = used != state.addresses
        if changed and len(found) > len(used):
            logger.warning(
                "discovery: %s: %s has %d addresses; %d used (max_backends)",
                entry.name, discover.dns, len(found), len(used),
            )  # fmt: skip
        if changed:
            added, removed = set(used) - set(state.addresses), set(state.addresses) - set(used)
            logger.info(
                "discovery: %s: %d backends (%d added, %d removed)",
                entry.name, len(used), len(added), len(removed),
            )  # fmt: skip
        state.addresses, state.found = used, len(found)
        state.resolved_at, state.error = self._wall(), None
        return changed

    async def run(self, follower: Follower) -> None:
        """Resolve what is due, have `follower` apply what changed, sleep until the next
        entry is due (at most `MAX_IDLE_S`); until cancelled. A change the runtime could
        not apply is asked for again after the next lookups."""
        pending = False
        while True:
            await asyncio.sleep(self._idle_s(follower.source))
            try:
                changed = await self.refresh(follower.source)
            except Exception:  # the loop must outlive a bug: the last addresses stay
                logger.exception("discovery: a refresh failed")
                pending = True  # another entry's answer may have changed meanwhile
                continue
            if changed or pending:
                pending = not await _follow(follower)

    def _idle_s(self, source: Config) -> float:
        dues = [self._entry(entry).due for entry in _of(source)]
        wait = min(dues, default=self._clock() + MAX_IDLE_S) - self._clock()
        return min(max(wait, 0.0), MAX_IDLE_S)

    def status(self, source: Config) -> list[dict[str, Any]]:
        """Per discovering entry of `source`: its query, its backends, when it was last
        resolved, and the last error (the dashboard's and the backends API's view)."""
        rows = []
        for entry in _of(source):
            discover = entry.discover
            assert discover is not None
            state = self._known(entry)
            used = self._addresses(entry)
            rows.append(
                {
                    "entry": entry.name,
                    "dns": discover.dns,
                    "record": discover.record,
                    "interval_s": discover.interval_s,
                    "max_backends": discover.max_backends,
                    "backends": [backend_name(entry.name, a.host, port_of(entry, a)) for a in used],
                    "found": state.found if state is not None else 0,
                    "resolved_at": state.resolved_at if state is not None else None,
                    "last_error": state.error if state is not None else None,
                    "failed_at": state.failed_at if state is not None else None,
                }
            )
        return rows


def _of(config: Config) -> list[BackendConfig]:
    return [entry for entry in config.backends if entry.discover is not None]


async def _follow(follower: Follower) -> bool:
    """Whether the runtime applied the addresses found now (or had nothing to apply)."""
    try:
        await follower.follow_discovery()
    except NotReloading:  # shutting down: what is served now is served to the end
        return True
    except SwitchyardError as exc:  # logged by the runtime; asked again next round
        logger.warning("discovery: the new backends were not applied: %s", exc.message)
        return False
    except Exception:  # the loop must outlive a bug here too; asked again next round
        logger.exception("discovery: applying the new backends failed")
        return False
    return True

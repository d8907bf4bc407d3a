"""The gateway a process serves now: swapped whole by a config reload, drained at shutdown.

Each proxy request takes the current `Gateway` when it starts (`serving`) and keeps it to
the end, so a request in flight during a reload finishes on the old config, router,
dispatcher and providers while new requests see the new ones. A superseded generation's
loops stop at the swap; its providers that the new one does not share are closed once its
last request has ended.

At shutdown, `drain` stops new requests (they get 503, `/readyz` too), waits for those in
flight up to the deadline, then ends what is left: streams with their client format's
error event, whole requests still waiting for a backend with a 503.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from gateway.config.root import Config
from gateway.errors import (
    ConfigError,
    InvalidConfig,
    NotReloading,
    ReloadFailed,
    RestartRequired,
)
from gateway.process.reload_plan import ConfigChanges, compare, discovery_paths
from gateway.process.service import (
    Gateway,
    close_providers,
    next_generation,
    stop_gateway,
    stop_loops,
)

logger = logging.getLogger("switchyard")

T = TypeVar("T")

CUT_GRACE_S = 5.0
"""After the drain deadline, how long the requests just ended get to send their last bytes."""


_START_ERRORS = (OSError, RuntimeError, ValueError, TimeoutError)
"""What opening a provider (and starting an emulated engine) raises when it cannot."""


async def read_config(load: Callable[[], T]) -> T:
    """`load` (reading and validating a config file) off the event loop; InvalidConfig,
    logged once, when the file does not validate."""
    try:
        return await asyncio.to_thread(load)
    except ConfigError as exc:
        logger.warning("config reload refused, the running config stays: %s", exc)
        raise InvalidConfig(exc.source, exc.problems) from None


@dataclass(frozen=True, slots=True)
class ReloadResult:
    generation: int
    changes: ConfigChanges

    def as_dict(self) -> dict[str, object]:
        return {"object": "switchyard.reload", "generation": self.generation} | (
            self.changes.as_dict()
        )


@dataclass(slots=True, eq=False)
class Ticket:
    """One proxy request in flight: the generation it runs on, its task, whether the drain
    ended it."""

    gateway: Gateway
    task: asyncio.Task[object] | None
    cut: bool = False


class Serving:
    """`Runtime.serving()`: a ticket on the current generation for one request's span (a
    plain class, not `@contextmanager`: this runs for every request)."""

    __slots__ = ("_runtime", "_ticket")

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._ticket = Ticket(runtime.current, asyncio.current_task())

    def __enter__(self) -> Ticket:
        self._runtime._hold(self._ticket)
        return self._ticket

    def __exit__(self, *exc: object) -> None:
        self._runtime._release(self._ticket)


class Expansion(Protocol):
    """DNS discovery (`gateway.discovery.refresh.Discovery`), as the runtime uses it."""

    def expand(self, source: Config) -> Config:
        """`source` with each discovering entry expanded to the backends it has now."""
        ...

    async def prepare(self, source: Config) -> None:
        """Look up the entries of `source` that have no answer yet (a reload's)."""
        ...


class Runtime:
    def __init__(
        self,
        gateway: Gateway,
        *,
        load: Callable[[], Config] | None = None,
        on_swap: Callable[[Gateway], None] = lambda gateway: None,
        discovery: tuple[Config, Expansion] | None = None,
        start_discovery: Callable[[], Awaitable[Expansion]] | None = None,
    ) -> None:
        """`load`: reads and validates the config file (raising ConfigError), as start-up
        did; None when there is no file to reload. `on_swap`: told each new generation.
        `discovery`: the config as written and the discovery that `gateway`'s config was
        expanded by; every config applied from then on is expanded by it too.
        `start_discovery`: starts DNS discovery (its loop included) in a process started
        without it, for a reload that adds the first `discover` block; None: such a
        reload needs a restart."""
        self._current = gateway
        self._load = load
        self._on_swap = on_swap
        self._source = gateway.config if discovery is None else discovery[0]
        self._expansion: Expansion | None = None if discovery is None else discovery[1]
        self._start_discovery = start_discovery
        self.generation = 1
        self._tickets: dict[int, dict[Ticket, None]] = {id(gateway): {}}
        """Per generation, its requests in flight, in arrival order (a dict: taking one
        out at its end costs the same however many are in flight)."""
        """Requests in flight, by the id of the generation they run on."""
        self._retired: dict[int, Gateway] = {}
        """Superseded generations whose requests are still finishing."""
        self._lock = asyncio.Lock()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def current(self) -> Gateway:
        return self._current

    @property
    def source(self) -> Config:
        """The config as written: the current generation's before any DNS discovery
        expanded it (`current.config`)."""
        return self._source

    @property
    def draining(self) -> bool:
        return self._current.drain.draining

    @property
    def retiring(self) -> int:
        """Superseded generations whose last requests are still finishing."""
        return len(self._retired)

    def in_flight(self) -> int:
        return sum(len(tickets) for tickets in self._tickets.values())

    def serving(self) -> Serving:
        """The current generation, held for one request until it ends (`with`)."""
        return Serving(self)

    def _hold(self, ticket: Ticket) -> None:
        self._tickets[id(ticket.gateway)][ticket] = None
        self._idle.clear()

    def _release(self, ticket: Ticket) -> None:
        del self._tickets[id(ticket.gateway)][ticket]
        self._ended(ticket.gateway)

    async def reload(self, load: Callable[[], Config] | None = None) -> ReloadResult:
        """Read the file again (with `load`, or the runtime's own) and apply it (`apply`);
        InvalidConfig when it does not validate, the running config unchanged."""
        load = load or self._load
        if load is None:
            raise NotReloading("this gateway was not started from a config file")
        return await self.apply(await read_config(load))

    def check(self, config: Config) -> ConfigChanges:
        """What applying `config` would change; NotReloading while shutting down,
        RestartRequired (logged) when only a restart can apply it."""
        return self._check(self._expanded(config))

    def _expanded(self, config: Config) -> Config:
        return config if self._expansion is None else self._expansion.expand(config)

    def _check(self, config: Config) -> ConfigChanges:
        if self.draining:
            raise NotReloading("the gateway is shutting down")
        changes = compare(self._current.config, config)
        if self._expansion is None and self._start_discovery is None:  # no loop to follow it
            changes = changes.needing_restart(discovery_paths(config))
        if changes.restart_only:
            logger.warning(
                "config reload refused, the running config stays: %s need a restart",
                ", ".join(changes.restart_only),
            )
            raise RestartRequired(changes.restart_only)
        return changes

    async def apply(self, config: Config) -> ReloadResult:
        """Swap in a generation built for `config` (a validated one), atomically: it is
        fully started before any new request sees it."""
        async with self._lock:
            await self._prepare_discovery(config)
            result = await self._swap(config, self._expanded(config), "config reloaded")
            self._source = config
        return result

    async def _prepare_discovery(self, config: Config) -> None:
        """Before `config` is expanded: its discovering entries looked up, so that a reload
        adding one (or pointing one at another name) serves its addresses at once; DNS
        discovery started first if this is the process's first `discover` block."""
        if not discovery_paths(config) or self.draining:
            return
        if self._expansion is None:
            if self._start_discovery is None:
                return  # refused by `_check`: only a restart starts it
            if compare(self._current.config, config).restart_only:
                return  # refused by `_check` anyway: start nothing for it
            self._expansion = await self._start_discovery()
        await self._expansion.prepare(config)

    async def follow_discovery(self) -> ReloadResult | None:
        """Apply the config as written again, expanded with the backends discovered now,
        as a reload of the same file; None when they are those served already."""
        async with self._lock:
            config = self._expanded(self._source)
            changes = compare(self._current.config, config)
            if not (changes.backends.moved or changes.routes.moved):
                return None
            return await self._swap(self._source, config, "discovered backends applied")

    async def _swap(self, source: Config, config: Config, what: str) -> ReloadResult:
        """Start a generation for `config` (expanded from `source`) and make it current."""
        changes = self._check(config)
        old = self._current
        try:
            new = await next_generation(old, config, changes)
        except _START_ERRORS as exc:  # an engine or provider that would not open
            logger.warning("%s failed, the running config stays: %r", what, exc)
            raise ReloadFailed(f"the new config could not be started: {exc!r}") from exc
        self._tickets[id(new)] = {}
        self._current = new
        self.generation += 1
        self._on_swap(new)
        try:
            await stop_loops(old)
        finally:  # retired even if one of its loops had failed
            self._retired[id(old)] = old
            self._ended(old)
        logger.info("%s (generation %d): %s", what, self.generation, changes.describe())
        return ReloadResult(self.generation, changes)

    async def drain(self, deadline_s: float) -> None:
        """Refuse new requests, let those in flight finish within `deadline_s`, then end
        the rest (streams with an error event, whole requests with a 503)."""
        drain = self._current.drain
        drain.start("draining")
        logger.info(
            "shutting down: %d requests in flight may finish within %.0f s",
            self.in_flight(),
            deadline_s,
        )
        if await self._wait_idle(deadline_s):
            return
        streams = drain.cut_streams()
        waiting = [
            ticket
            for tickets in self._tickets.values()
            for ticket in tickets
            if ticket.task is not None and ticket.task not in streams
        ]
        for ticket in waiting:
            ticket.cut = True
            assert ticket.task is not None
            ticket.task.cancel()
        logger.warning(
            "drain deadline passed: ended %d streams and %d waiting requests",
            len(streams),
            len(waiting),
        )
        await self._wait_idle(CUT_GRACE_S)

    async def close(self) -> None:
        """Stop the current generation and close every provider still open."""
        if self._closing:
            await asyncio.wait(self._closing)
        current = {id(p) for p in self._current.providers.values()}
        for old in self._retired.values():
            await close_providers(p for p in old.providers.values() if id(p) not in current)
            current |= {id(p) for p in old.providers.values()}
        self._retired.clear()
        await stop_gateway(self._current)

    async def _wait_idle(self, timeout_s: float) -> bool:
        if self._idle.is_set():
            return True
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    def _ended(self, gateway: Gateway) -> None:
        """A request ended (or a generation was superseded): retire what is done."""
        key = id(gateway)
        if not self._tickets[key] and key in self._retired:
            del self._tickets[key]
            self._retire(self._retired.pop(key))
        if not self.in_flight():
            self._idle.set()

    def _retire(self, old: Gateway) -> None:
        """Close `old`'s providers that no live generation uses, in the background."""
        live = [self._current, *self._retired.values()]
        used = {id(p) for gateway in live for p in gateway.providers.values()}
        closing = [p for p in old.providers.values() if id(p) not in used]
        if not closing:
            return
        task = asyncio.create_task(close_providers(closing), name="close-retired-providers")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

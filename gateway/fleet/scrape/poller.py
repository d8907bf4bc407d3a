"""The one poller for engine scrapes: what every background read of an engine shares.

A scraper (`EngineScraper` for `/metrics`, `LlamaCppScraper` for `/slots` and `/props`)
says only what it reads and how it folds a reading into the fleet state; `Poller` owns
the rest, so the two cannot drift apart:

- an HTTP session of its own, created on first use (a session binds to the running
  loop): background reads never take connections from requests, send no credentials and
  read no proxy settings;
- bounded reads: no redirects followed, a deadline for the whole exchange and a cap on
  the body, every transport failure turned into a `ScrapeError` whose message is safe to
  log;
- one background task polling each target every `interval_s` on the shared beat
  (`sleep_to_beat`: targets of the same interval, and other loops of that period, wake
  together), started by `start` and ended by `stop` through `cancel_and_wait`;
- per target, a failure is logged once when it starts (a warning) and once when it ends;
  the failures between are logged at debug level.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, Generic, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

from gateway.fleet.state import FleetState
from gateway.process.tasks import cancel_and_wait, sleep_to_beat
from providers.settings import DEFAULT_IDLE_KEEPALIVE_S
from providers.transport.http_transport import backend_session

if TYPE_CHECKING:
    import aiohttp

_READ_CHUNK_BYTES = 64 * 1024

R = TypeVar("R")


class ScrapeError(Exception):
    """A read that produced no body; the message is safe to log. Never leaves a poller:
    it becomes the reading's `error`."""


class PollBounds(Protocol):
    """What bounds a target's reads (`MetricsConfig`, `LlamaCppConfig`)."""

    @property
    def interval_s(self) -> float: ...

    @property
    def timeout_s(self) -> float: ...

    @property
    def max_body_bytes(self) -> int: ...


class PollTarget(Protocol):
    """A backend a poller reads, and the bounds of its reads."""

    @property
    def backend(self) -> str: ...

    @property
    def config(self) -> PollBounds: ...


TargetT = TypeVar("TargetT", bound=PollTarget)


class Poller(ABC, Generic[TargetT]):
    """Polls every target from one background task; see the module doc. A subclass names
    its task and logs (`task_name`, `label`, `verb`, `logger`, `accept`) and implements
    `poll_once`, the unit: read a target, record what was read."""

    task_name: ClassVar[str]
    label: ClassVar[str]
    """What the logs call this poller: `engine metrics`, `llama.cpp`."""
    verb: ClassVar[str]
    """What it does to a backend, in its logs: `scraping`, `reading`."""
    failing_means: ClassVar[str] = ""
    """What a failure costs, said in its warning (ending in `, `); empty: nothing to say."""
    logger: ClassVar[logging.Logger]
    accept: ClassVar[str]
    """The `Accept` header of every read."""

    def __init__(self, targets: Sequence[TargetT], state: FleetState) -> None:
        self.targets = list(targets)
        self._state = state
        """Where `poll_once` records what it read."""
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._failing: dict[tuple[str, str], bool] = {}

    @abstractmethod
    async def poll_once(self, target: TargetT) -> object:
        """Read `target` and record what was read; never raises a read failure."""

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.task_name)
        self._task.add_done_callback(self._log_crash)

    async def stop(self) -> None:
        task, self._task = self._task, None
        try:
            await cancel_and_wait(task)
        finally:
            if self._session is not None:
                await self._session.close()
                self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp  # with the first poll: a config without polls never loads it

            connector = aiohttp.TCPConnector(
                limit=max(1, len(self.targets)), keepalive_timeout=DEFAULT_IDLE_KEEPALIVE_S
            )
            self._session = backend_session(connector)
        return self._session

    async def read(
        self, target: TargetT, url: str, parse: Callable[[bytes], R | None], missing: str
    ) -> tuple[R | None, str]:
        """What `parse` makes of `url`'s body, and `""`, or None and why (`missing` when
        the body holds nothing `parse` knows); never raises a read failure."""
        config = target.config
        try:
            body = await fetch_bounded(
                self.session,
                url,
                accept=self.accept,
                timeout_s=config.timeout_s,
                max_body_bytes=config.max_body_bytes,
            )
        except ScrapeError as exc:
            return None, self.explain(str(exc))
        reading = parse(body)
        return reading, "" if reading is not None else missing

    def explain(self, failure: str) -> str:
        """A read failure as the logs and the fleet's views show it."""
        return failure

    def note(self, target: TargetT, where: str, error: str, source: str = "") -> bool:
        """Log a read's outcome when it changes (`error` empty: it worked); True when it
        works again after failing. `source` tells apart reads of one backend."""
        key = (target.backend, source)
        was_failing = self._failing.get(key)
        failing = bool(error)
        self._failing[key] = failing
        name = f"{target.backend} {source}".rstrip()
        if failing and was_failing is not True:
            self.logger.warning(
                "%s: %s backend %s at %s failed (%s); %sretrying every %gs",
                self.label,
                self.verb,
                target.backend,
                loggable_url(where),
                error,
                self.failing_means,
                target.config.interval_s,
            )
        elif failing:
            self.logger.debug("%s: backend %s still failing (%s)", self.label, name, error)
        elif was_failing:
            self.logger.info("%s: %s backend %s again", self.label, self.verb, name)
        return was_failing is True and not failing

    async def _run(self) -> None:
        try:
            async with asyncio.TaskGroup() as polls:
                for target in self.targets:
                    polls.create_task(self._poll_forever(target))
        except ExceptionGroup as bugs:
            # A target's bug ends every target's loop; the bug itself is what is logged
            # and what `stop` raises, not the group that carried it.
            raise bugs.exceptions[0] from None

    async def _poll_forever(self, target: TargetT) -> None:
        while True:
            await self.poll_once(target)
            await sleep_to_beat(target.config.interval_s)

    def _log_crash(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self.logger.error("%s: polling stopped", self.label, exc_info=task.exception())


def loggable_url(url: str) -> str:
    """`url` without user info, query or fragment, for logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


async def fetch_bounded(
    session: aiohttp.ClientSession,
    url: str,
    *,
    accept: str,
    timeout_s: float,
    max_body_bytes: int,
) -> bytes:
    """GET `url` (no redirects followed) and its body; raises ScrapeError on any transport
    failure, a status other than 200, a body over `max_body_bytes` or the deadline of
    `timeout_s` for the whole exchange."""
    import aiohttp

    try:
        async with (
            asyncio.timeout(timeout_s),
            session.get(url, headers={"accept": accept}, allow_redirects=False) as resp,
        ):
            if resp.status != 200:
                raise ScrapeError(f"HTTP {resp.status}")
            return await _read_bounded(resp, max_body_bytes)
    except TimeoutError:
        raise ScrapeError(f"no answer within {timeout_s:g}s") from None
    except (aiohttp.ClientError, OSError) as exc:
        raise ScrapeError(type(exc).__name__) from None


async def _read_bounded(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    if resp.content_length is not None and resp.content_length > limit:
        raise ScrapeError(f"body of {resp.content_length:,} bytes is over {limit:,}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(_READ_CHUNK_BYTES):
        size += len(chunk)
        if size > limit:
            raise ScrapeError(f"body is over {limit:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)

"""Polling engines' Prometheus `/metrics` in the background, for the load the policies read.

Nothing here is on the request path. One task scrapes every backend whose `metrics` is
enabled, each every `interval_s`, with its own pooled session (so scrapes never take
connections from requests) and a deadline of `timeout_s` for the whole scrape. A reading
goes to FleetState, whose views show it to policies until it is `stale_after_s` old.

What is requested is only the configured URL, or the backend's own origin plus
`metrics.path`: redirects are not followed, no credentials are sent (vLLM, SGLang and
llama.cpp serve `/metrics` without the API key), and the URL is logged without user
info or query. A failing backend is logged once when it starts failing (a warning) and
once when it recovers; the failures in between are counted and logged at debug level.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from gateway.config.backends import BackendConfig, MetricsConfig
from gateway.fleet.scrape.engine_metrics import EngineLoad, parse_engine_load
from gateway.fleet.state import FleetState
from gateway.process.tasks import cancel_and_wait
from providers.settings import DEFAULT_IDLE_KEEPALIVE_S
from providers.transport.http_transport import backend_session

logger = logging.getLogger("switchyard.engine_metrics")

_ACCEPT = "text/plain;version=0.0.4;q=1.0, */*;q=0.1"
_READ_CHUNK_BYTES = 64 * 1024

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ScrapeTarget:
    backend: str
    url: str
    models: tuple[str, ...]
    config: MetricsConfig

    @property
    def where(self) -> str:
        """The URL as logs show it: without user info, query or fragment."""
        return loggable_url(self.url)


def loggable_url(url: str) -> str:
    """`url` without user info, query or fragment, for logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class ScrapeError(Exception):
    """A scrape that produced no reading; the message is safe to log."""


def metrics_url(backend: BackendConfig, base_url: str) -> str:
    """`metrics.url`, else the origin of the backend's base URL plus `metrics.path`."""
    metrics = backend.metrics or MetricsConfig()
    if metrics.url is not None:
        return metrics.url
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, metrics.path, "", ""))


def scrape_targets(
    backends: Iterable[BackendConfig], base_urls: Mapping[str, str]
) -> list[ScrapeTarget]:
    """A target per backend with metrics enabled; `base_urls` holds each backend's
    provider's `base_url` (an emulated engine's is known only once it has started)."""
    return [
        ScrapeTarget(b.name, metrics_url(b, base_urls[b.name]), tuple(b.models), b.metrics)
        for b in backends
        if b.metrics is not None and b.metrics.enabled
    ]


async def fetch_metrics(session: aiohttp.ClientSession, target: ScrapeTarget) -> str:
    """The exposition text; raises ScrapeError as `fetch_bounded`."""
    config = target.config
    body = await fetch_bounded(
        session,
        target.url,
        accept=_ACCEPT,
        timeout_s=config.timeout_s,
        max_body_bytes=config.max_body_bytes,
    )
    return body.decode("utf-8", errors="replace")


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


def scrape_session(targets: int) -> aiohttp.ClientSession:
    """A session of its own for background reads: they never take connections from
    requests, send no credentials and read no proxy settings."""
    connector = aiohttp.TCPConnector(
        limit=max(1, targets), keepalive_timeout=DEFAULT_IDLE_KEEPALIVE_S
    )
    return backend_session(connector)


async def poll_forever(
    targets: Sequence[T],
    poll: Callable[[T], Awaitable[object]],
    interval_s: Callable[[T], float],
    *,
    clock: Callable[[], float] | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> None:
    """Poll every target every `interval_s(target)`, the ones due together; never returns
    unless there is no target. `clock`: the event loop's unless given."""
    if not targets:
        return
    now_s = clock or asyncio.get_running_loop().time
    due = [now_s()] * len(targets)
    while True:
        now = now_s()
        ready = [i for i, at in enumerate(due) if at <= now]
        await asyncio.gather(*(poll(targets[i]) for i in ready))
        for i in ready:
            due[i] = now + interval_s(targets[i])
        await sleep(max(0.0, min(due) - now_s()))


class EngineScraper:
    """Scrapes every target on its own interval from one background task; see the module
    doc. `scrape_once` is the unit: fetch, parse, record, log."""

    def __init__(self, targets: list[ScrapeTarget], state: FleetState) -> None:
        self.targets = targets
        self._state = state
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._failing: dict[str, bool] = {}

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="engine-metrics")
        self._task.add_done_callback(_log_crash)

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
        # Created lazily: a session binds to the running loop.
        if self._session is None:
            self._session = scrape_session(len(self.targets))
        return self._session

    async def scrape_once(self, target: ScrapeTarget) -> EngineLoad | None:
        """Scrape one target and record the outcome; never raises a scrape failure."""
        try:
            text = await fetch_metrics(self.session, target)
        except ScrapeError as exc:
            self._record(target, None, str(exc))
            return None
        load = parse_engine_load(text, target.models)
        self._record(target, load, "" if load else "no known engine metrics in the response")
        return load

    async def _run(self) -> None:
        await poll_forever(self.targets, self.scrape_once, lambda t: t.config.interval_s)

    def _record(self, target: ScrapeTarget, load: EngineLoad | None, error: str) -> None:
        self._state.record_engine_load(target.backend, load, error)
        was_failing = self._failing.get(target.backend)
        failing = load is None
        self._failing[target.backend] = failing
        if failing and was_failing is not True:
            logger.warning(
                "engine metrics: scraping backend %s at %s failed (%s); "
                "its engine load is ignored once stale, retrying every %gs",
                target.backend,
                target.where,
                error,
                target.config.interval_s,
            )
        elif failing:
            logger.debug("engine metrics: backend %s still failing (%s)", target.backend, error)
        elif was_failing:
            logger.info("engine metrics: scraping backend %s again", target.backend)


def _log_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("engine metrics: polling stopped", exc_info=task.exception())

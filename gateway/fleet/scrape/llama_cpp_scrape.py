"""Polling llama.cpp's llama-server in the background: busy slots from `/slots` (the load
policies read) and the context window from `/props`.

Nothing here is on the request path. One task polls every `kind: llama-cpp` backend whose
`llama_cpp` reads are on, each every `interval_s`, with a pooled session of its own, a
deadline of `timeout_s` and a cap of `max_body_bytes` on every read; no redirects are
followed and no credentials sent. A `/slots` reading goes to FleetState like a `/metrics`
one (stale after `stale_after_s`); `/props` is read until it answers, and again whenever
`/slots` comes back after failing (the server may have restarted with another
`--ctx-size`). What was learnt of the window is logged once per value; a failing read is
logged once when it starts failing and once when it recovers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from gateway.config.backends import BackendConfig, LlamaCppConfig
from gateway.fleet.scrape.engine_scrape import (
    ScrapeError,
    fetch_bounded,
    loggable_url,
    poll_forever,
    scrape_session,
)
from gateway.fleet.scrape.llama_cpp_status import EngineSlots, parse_context_window, parse_slots
from gateway.fleet.state import FleetState
from gateway.process.tasks import cancel_and_wait

logger = logging.getLogger("switchyard.llama_cpp")

_ACCEPT = "application/json"
_EXPLAINED = {
    "HTTP 501": "HTTP 501: start llama-server with --slots, or set llama_cpp.slots: false",
    "HTTP 503": "HTTP 503: not ready, loading its model",
}


@dataclass(frozen=True, slots=True)
class LlamaCppTarget:
    backend: str
    origin: str
    """The server's scheme, host and port: its `/slots` and `/props` are beside `/v1`."""
    config: LlamaCppConfig
    configured_window: int | None
    """The backend's own `context_window_tokens`, which wins over what `/props` says."""

    @property
    def slots_url(self) -> str:
        return self.origin + "/slots"

    @property
    def props_url(self) -> str:
        return self.origin + "/props"


def llama_cpp_targets(
    backends: Iterable[BackendConfig], base_urls: Mapping[str, str]
) -> list[LlamaCppTarget]:
    """A target per llama-cpp backend with a read on; `base_urls` holds each backend's
    provider's filled-in `base_url`."""
    targets = []
    for backend in backends:
        config = backend.llama_cpp_status
        if config is None or not (config.slots or config.props):
            continue
        parts = urlsplit(base_urls[backend.name])
        origin = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        targets.append(LlamaCppTarget(backend.name, origin, config, backend.context_window_tokens))
    return targets


class LlamaCppScraper:
    """Polls every target from one background task; see the module doc. `poll_once` is
    the unit: `/slots`, then `/props` while it is due."""

    def __init__(self, targets: list[LlamaCppTarget], state: FleetState) -> None:
        self.targets = targets
        self._state = state
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._props_due = {t.backend for t in targets if t.config.props}
        self._windows: dict[str, int] = {}
        self._failing: dict[tuple[str, str], bool] = {}

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="llama-cpp-status")
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

    def learnt_window(self, backend: str) -> int | None:
        """The context window `/props` last reported for `backend`."""
        return self._windows.get(backend)

    async def poll_once(self, target: LlamaCppTarget) -> None:
        """Read what is due of one target and record it; never raises a read failure."""
        if target.config.slots:
            await self.read_slots(target)
        if target.backend in self._props_due:
            await self.read_props(target)

    async def read_slots(self, target: LlamaCppTarget) -> EngineSlots | None:
        try:
            slots = parse_slots(await self._get(target, target.slots_url))
            error = "" if slots is not None else "no list of slots in the answer"
        except ScrapeError as exc:
            slots, error = None, _EXPLAINED.get(str(exc), str(exc))
        self._state.record_engine_slots(target.backend, slots, error)
        if self._note(target, "/slots", error) and target.config.props:
            self._props_due.add(target.backend)  # back after failing: perhaps restarted
        return slots

    async def read_props(self, target: LlamaCppTarget) -> int | None:
        try:
            window = parse_context_window(await self._get(target, target.props_url))
            error = "" if window is not None else "no default_generation_settings.n_ctx"
        except ScrapeError as exc:
            window, error = None, _EXPLAINED.get(str(exc), str(exc))
        self._note(target, "/props", error)
        if window is not None:
            self._props_due.discard(target.backend)
            self._learn(target, window)
        return window

    async def _get(self, target: LlamaCppTarget, url: str) -> bytes:
        config = target.config
        return await fetch_bounded(
            self.session,
            url,
            accept=_ACCEPT,
            timeout_s=config.timeout_s,
            max_body_bytes=config.max_body_bytes,
        )

    def _learn(self, target: LlamaCppTarget, window: int) -> None:
        self._state.learn_context_window(target.backend, window)
        if self._windows.get(target.backend) == window:
            return
        self._windows[target.backend] = window
        configured = target.configured_window
        if configured is None:
            logger.info(
                "llama.cpp: backend %s reports a context window of %s tokens per slot "
                "(/props); the context-window-filter uses it",
                target.backend,
                f"{window:,}",
            )
        else:
            logger.info(
                "llama.cpp: backend %s reports a context window of %s tokens per slot "
                "(/props); its configured context_window_tokens %s is used",
                target.backend,
                f"{window:,}",
                f"{configured:,}",
            )

    def _note(self, target: LlamaCppTarget, source: str, error: str) -> bool:
        """Log a read's outcome when it changes; True when it works again after failing."""
        key = (target.backend, source)
        was_failing = self._failing.get(key)
        failing = bool(error)
        self._failing[key] = failing
        where = loggable_url(target.origin + source)
        if failing and was_failing is not True:
            logger.warning(
                "llama.cpp: reading backend %s at %s failed (%s); retrying every %gs",
                target.backend,
                where,
                error,
                target.config.interval_s,
            )
        elif failing:
            logger.debug(
                "llama.cpp: backend %s %s still failing (%s)", target.backend, source, error
            )
        elif was_failing:
            logger.info("llama.cpp: reading backend %s %s again", target.backend, source)
        return was_failing is True and not failing

    async def _run(self) -> None:
        await poll_forever(self.targets, self.poll_once, lambda t: t.config.interval_s)


def _log_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("llama.cpp: polling stopped", exc_info=task.exception())

"""Polling llama.cpp's llama-server in the background: busy slots from `/slots` (the load
policies read) and the context window from `/props`.

Nothing here is on the request path. One task polls every `kind: llama-cpp` backend whose
`llama_cpp` reads are on, each every `interval_s`, with a deadline of `timeout_s` and a
cap of `max_body_bytes` on every read; the session, the bounds, the loop and the logging
of failing reads are the shared poller's (`poller.py`). A `/slots` reading goes to
FleetState like a `/metrics` one (stale after `stale_after_s`); `/props` is read until it
answers, and again whenever `/slots` comes back after failing (the server may have
restarted with another `--ctx-size`). What was learnt of the window is logged once per
value.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from gateway.config.backends import BackendConfig
from gateway.config.engine_polls import LlamaCppConfig
from gateway.fleet.scrape.llama_cpp_status import EngineSlots, parse_context_window, parse_slots
from gateway.fleet.scrape.poller import Poller
from gateway.fleet.state import FleetState

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


class LlamaCppScraper(Poller[LlamaCppTarget]):
    """Polls every target on its own interval; see the module doc. `poll_once` is the
    unit: `/slots`, then `/props` while it is due."""

    task_name = "llama-cpp-status"
    label = "llama.cpp"
    verb = "reading"
    logger = logging.getLogger("switchyard.llama_cpp")
    accept = "application/json"

    def __init__(self, targets: list[LlamaCppTarget], state: FleetState) -> None:
        super().__init__(targets, state)
        self._props_due = {t.backend for t in targets if t.config.props}
        self._windows: dict[str, int] = {}

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
        slots, error = await self.read(
            target, target.slots_url, parse_slots, "no list of slots in the answer"
        )
        self._state.record_engine_slots(target.backend, slots, error)
        recovered = self.note(target, target.slots_url, error, "/slots")
        if recovered and target.config.props:
            self._props_due.add(target.backend)  # back after failing: perhaps restarted
        return slots

    async def read_props(self, target: LlamaCppTarget) -> int | None:
        window, error = await self.read(
            target, target.props_url, parse_context_window, "no default_generation_settings.n_ctx"
        )
        self.note(target, target.props_url, error, "/props")
        if window is not None:
            self._props_due.discard(target.backend)
            self._learn(target, window)
        return window

    def explain(self, failure: str) -> str:
        return _EXPLAINED.get(failure, failure)

    def _learn(self, target: LlamaCppTarget, window: int) -> None:
        self._state.learn_context_window(target.backend, window)
        if self._windows.get(target.backend) == window:
            return
        self._windows[target.backend] = window
        configured = target.configured_window
        if configured is None:
            self.logger.info(
                "llama.cpp: backend %s reports a context window of %s tokens per slot "
                "(/props); the context-window-filter uses it",
                target.backend,
                f"{window:,}",
            )
        else:
            self.logger.info(
                "llama.cpp: backend %s reports a context window of %s tokens per slot "
                "(/props); its configured context_window_tokens %s is used",
                target.backend,
                f"{window:,}",
                f"{configured:,}",
            )

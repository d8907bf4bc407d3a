"""`switchyard serve`'s signals: SIGHUP reloads the config, SIGTERM/SIGINT drain first.

Installed by the app's lifespan in a served process only (never in a test's or a
benchmark's event loop). uvicorn has its own SIGTERM/SIGINT handler, which begins its
shutdown; this one runs the drain (`Runtime.drain`) first and hands the signal on to it
afterwards. A second SIGINT during the drain hands it on at once. On leaving, the previous
handlers are restored.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from gateway.errors import SwitchyardError
from gateway.process.runtime import Runtime

logger = logging.getLogger("switchyard")

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_Handler = Callable[[int, FrameType | None], Any] | int | None


@contextmanager
def handle_signals(
    runtime: Runtime,
    loop: asyncio.AbstractEventLoop,
    reload: Callable[[Runtime], Coroutine[Any, Any, None]] | None = None,
) -> Iterator[None]:
    """SIGHUP and the stop signals handled as the module says while the context is open.
    `reload`: what SIGHUP runs instead of a plain reload (a worker's, which reports it)."""
    reload_on_hup = reload or _reload
    tasks: set[asyncio.Task[None]] = set()
    previous: dict[int, _Handler] = {}

    def spawn(coro: Coroutine[Any, Any, None]) -> None:
        task = loop.create_task(coro)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    def on_hup(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(spawn, reload_on_hup(runtime))

    def on_stop(signum: int, frame: FrameType | None) -> None:
        if not runtime.draining:
            deadline_s = runtime.current.config.server.shutdown_drain_s
            then = functools.partial(_pass_on, previous, signum, None)
            loop.call_soon_threadsafe(spawn, _drain_then(runtime, deadline_s, then))
        elif signum == signal.SIGINT:  # a second Ctrl+C: stop waiting
            _pass_on(previous, signum, frame)

    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hup)
    for stop in _STOP_SIGNALS:
        previous[stop] = signal.signal(stop, on_stop)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        for task in tasks:
            task.cancel()


async def _reload(runtime: Runtime) -> None:
    with contextlib.suppress(SwitchyardError):  # logged once by the runtime; config stays
        await runtime.reload()


async def _drain_then(runtime: Runtime, deadline_s: float, then: Callable[[], None]) -> None:
    try:
        await runtime.drain(deadline_s)
    finally:
        then()


def _pass_on(previous: dict[int, _Handler], signum: int, frame: FrameType | None) -> None:
    """Run the handler that was there before ours (uvicorn's: begin its shutdown)."""
    handler = previous.get(signum)
    if callable(handler):
        handler(signum, frame)
    elif handler != signal.SIG_IGN:
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

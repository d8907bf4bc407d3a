"""One log line per request, written behind a bounded queue by a background thread.

The request path only enqueues; rendering and writing happen off the event loop. When the
queue is full the line is dropped and counted, never waited for.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

import orjson

logger = logging.getLogger("switchyard.access")

Render = Callable[[], dict[str, Any]]
_STOP: Render = lambda: {}  # noqa: E731 - a sentinel, compared by identity


class RequestLog:
    def __init__(self, max_queued: int) -> None:
        self._queue: queue.Queue[Render] = queue.Queue(maxsize=max_queued)
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self.written = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="switchyard-log", daemon=True)
        self._thread.start()

    def emit(self, render: Render) -> None:
        """Queue a line; `render` runs on the writer thread and returns the fields."""
        try:
            self._queue.put_nowait(render)
        except queue.Full:
            self.dropped += 1

    def stop(self, timeout_s: float = 2.0) -> None:
        if self._thread is None:
            return
        try:
            self._queue.put(_STOP, timeout=timeout_s)
        except queue.Full:
            return
        self._thread.join(timeout_s)
        self._thread = None

    def _run(self) -> None:
        while True:
            render = self._queue.get()
            if render is _STOP:
                return
            try:
                line = orjson.dumps(render()).decode()
            except (TypeError, ValueError) as exc:
                # A record that cannot be rendered is a bug worth seeing, not a crash.
                logger.warning("unrenderable request log record: %s", exc)
                continue
            if logger.isEnabledFor(logging.INFO):
                logger.info(line)
            self.written += 1

"""One log line per request, written behind a bounded queue by a background thread.

The request path only appends a closure to a bounded deque (no lock, no wake-up: a
Condition.notify per request cost more than the rest of the logging). The writer thread
drains it a few times a second, renders and writes. When the queue is full the line is
dropped and counted, never waited for.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

logger = logging.getLogger("switchyard.access")

Render = Callable[[], dict[str, Any]]
_DRAIN_INTERVAL_S = 0.05


class RequestLog:
    def __init__(self, max_queued: int) -> None:
        self._max_queued = max_queued
        self._queue: deque[Render] = deque()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self.written = 0

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="switchyard-log", daemon=True)
        self._thread.start()

    def emit(self, render: Render) -> None:
        """Queue a line; `render` runs on the writer thread and returns the fields."""
        if len(self._queue) >= self._max_queued:
            self.dropped += 1
            return
        self._queue.append(render)

    def stop(self, timeout_s: float = 2.0) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout_s)
        self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(_DRAIN_INTERVAL_S):
            self._drain()
        self._drain()

    def _drain(self) -> None:
        enabled = logger.isEnabledFor(logging.INFO)
        while self._queue:
            render = self._queue.popleft()
            if not enabled:
                continue
            try:
                line = orjson.dumps(render()).decode()
            except (TypeError, ValueError) as exc:
                # A record that cannot be rendered is a bug worth seeing, not a crash.
                logger.warning("unrenderable request log record: %s", exc)
                continue
            logger.info(line)
            self.written += 1

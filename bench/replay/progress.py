"""One updating stderr line while a replay runs: done/total, errors, elapsed."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from .schedule import ReplayRun, RequestResult, Transport, replay
from .trace import TraceRequest

_MIN_REDRAW_S = 0.2
_TICK_S = 1.0


class Progress:
    """Redraws at most every 0.2 s on a terminal; elsewhere a plain line every 10 s."""

    def __init__(
        self, label: str, total: int, *, stream: TextIO | None = None, enabled: bool = True
    ) -> None:
        self._label = label
        self._total = total
        self._stream = stream or sys.stderr
        self._enabled = enabled
        self._tty = self._stream.isatty()
        self._started = time.monotonic()
        self._drawn_at = 0.0
        self.done = 0
        self.errors = 0

    def update(self, result: RequestResult) -> None:
        self.done += 1
        self.errors += 0 if result.ok else 1
        self.draw()

    def line(self) -> str:
        elapsed = time.monotonic() - self._started
        share = self.done / self._total if self._total else 1.0
        bar = ("#" * round(share * 20)).ljust(20, ".")
        return (
            f"[{self._label}] [{bar}] {self.done}/{self._total} done, "
            f"{self.errors} errors, {elapsed:.0f} s"
        )

    def draw(self, *, force: bool = False) -> None:
        now = time.monotonic()
        interval = _MIN_REDRAW_S if self._tty else 10.0
        if not self._enabled or (not force and now - self._drawn_at < interval):
            return
        self._drawn_at = now
        end = "" if self._tty else "\n"
        prefix = "\r\x1b[2K" if self._tty else ""
        self._stream.write(prefix + self.line() + end)
        self._stream.flush()

    async def tick(self) -> None:
        """Keep the elapsed time moving while nothing completes; cancel to stop."""
        while True:
            await asyncio.sleep(_TICK_S)
            self.draw()

    def close(self) -> None:
        self._drawn_at = 0.0
        self.draw(force=True)
        if self._enabled and self._tty:
            self._stream.write("\n")
            self._stream.flush()


async def replay_with_progress(
    requests: Sequence[TraceRequest],
    transport: Transport,
    *,
    time_scale: float,
    label: str,
    enabled: bool = True,
) -> ReplayRun:
    """`schedule.replay` with a `Progress` line labelled `label` while it runs."""
    progress = Progress(label, len(requests), enabled=enabled)
    ticker = asyncio.create_task(progress.tick())
    try:
        return await replay(requests, transport, time_scale=time_scale, on_result=progress.update)
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
        progress.close()

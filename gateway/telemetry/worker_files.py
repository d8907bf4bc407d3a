"""The metric files of `serve --workers N` (`PROMETHEUS_MULTIPROC_DIR`): what a scrape of
any worker exports, and the files of workers that died.

Every worker writes its values to its own files there; a scrape adds them up
(prometheus_client's `MultiProcessCollector`), leaves out the gauges of backends and
routes the serving config no longer has (`serving_series.py`), and first drops the live
gauges of workers that are gone.
"""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest, multiprocess
from prometheus_client.multiprocess import MultiProcessCollector

from gateway.telemetry.serving_series import Serving, ServingOnly


def scrape_workers(directory: str, serving: Serving | None) -> bytes:
    """The exposition text of every worker's values (slow with many series: call it off
    the event loop)."""
    forget_dead_workers(directory)
    registry = CollectorRegistry()
    files = MultiProcessCollector(None, path=directory)  # type: ignore[no-untyped-call]
    registry.register(ServingOnly(files, lambda: serving))
    return generate_latest(registry)


def forget_dead_workers(directory: str) -> None:
    """Drop the live gauges of workers that died without a clean shutdown (killed, or
    restarted by uvicorn): their in-flight and health values must stop counting."""
    for path in Path(directory).glob("gauge_live*_*.db"):
        pid_text = path.stem.rsplit("_", 1)[-1]
        if pid_text.isdigit() and not pid_alive(int(pid_text)):
            multiprocess.mark_process_dead(int(pid_text), directory)  # type: ignore[no-untyped-call]


def pid_alive(pid: int) -> bool:
    """Whether a process has the pid (a worker's files stay while it may be alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process reuses the pid; keep its files to be safe
    return True

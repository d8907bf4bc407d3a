"""Several uvicorn worker processes: one config, one Prometheus view, migrations run once,
reloads that reach every worker.

The parent process (`switchyard serve --workers N`) prepares the environment the workers
inherit (and a run directory, where they coordinate reloads: `worker_reloads.py`); each
worker builds its app from it with `app_from_env`. The parent passes SIGHUP on to every
worker, each of which reloads the config file (uvicorn's own supervisor would restart them
instead); the admin API's reload, answered by one worker, sends the parent that SIGHUP.
SIGTERM reaches each as uvicorn's does, and each drains.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.supervisors.multiprocess import Multiprocess

from gateway.config.root import Config, parse_yaml
from gateway.http.app import SwitchyardApp, create_app
from gateway.http.server import warn_unless_bounded, warn_unless_spliced
from gateway.process.worker_reloads import WorkerReloads
from gateway.store.config import resolve_url
from gateway.telemetry.metrics import MULTIPROC_ENV

logger = logging.getLogger("switchyard")

CONFIG_ENV = "SWITCHYARD_CONFIG"
MIGRATED_ENV = "SWITCHYARD_MIGRATED"
ACCESS_LOG_ENV = "SWITCHYARD_ACCESS_LOG"
"""The access log's mode, which `serve --access-log` may have set over the file's."""
RUN_DIR_ENV = "SWITCHYARD_RUN_DIR"
"""The directory where the workers of one `serve` coordinate their reloads."""
WORKER_HEALTHCHECK_S = 30
"""How long the parent waits for a worker's answer before it kills and replaces it. A new
worker answers only once it has imported the gateway, which takes longer than uvicorn's
5 s default on a busy machine (it would kill every worker before one ever started)."""


def prepare_metrics_dir(workers: int) -> Callable[[], None]:
    """Make `PROMETHEUS_MULTIPROC_DIR` ready: created, emptied of an earlier run's values
    (they would be added to this one's); a temporary one when several workers need it and
    none was given. Returns the clean-up to run when serving ends."""
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        for stale in Path(directory).glob("*.db"):
            stale.unlink()
        return lambda: None
    if workers <= 1:
        return lambda: None
    created = tempfile.mkdtemp(prefix="switchyard-metrics-")
    os.environ[MULTIPROC_ENV] = created
    return lambda: shutil.rmtree(created, ignore_errors=True)


def prepare_workers(config: Config, config_path: Path) -> None:
    """Point the workers at the config and a migrated database."""
    os.environ[CONFIG_ENV] = str(config_path.resolve())
    os.environ[ACCESS_LOG_ENV] = config.telemetry.access_log
    url = resolve_url(config.store)
    if url is not None and config.store.migrate_on_start:
        from gateway.store.migrate import MIGRATION_ERRORS, upgrade

        try:
            asyncio.run(upgrade(url))
        except MIGRATION_ERRORS as exc:
            # Each worker migrates on start instead; serving must not wait for the database.
            logger.warning("migration before starting the workers failed: %s", type(exc).__name__)
        else:
            os.environ[MIGRATED_ENV] = "1"


def app_from_env() -> SwitchyardApp:
    """A worker's app (uvicorn's factory): the config the parent named, as the parent
    runs it; a reload reads the same file the same way, in every worker at once."""
    path = Path(os.environ[CONFIG_ENV])
    run_dir = Path(os.environ[RUN_DIR_ENV])
    # The parent spawned this worker: it is the parent until the worker ends.
    reloads = WorkerReloads(run_dir, path, _worker_config, parent_pid=os.getppid())
    config, _ = reloads.read()
    return create_app(config, reload_from=lambda: reloads.read()[0], signals=True, workers=reloads)


def _worker_config(text: str, source: str) -> Config:
    """The config file's text as the parent runs it: migrated once, `--access-log` over
    the file's mode."""
    config = parse_yaml(text, source)
    store, telemetry = config.store, config.telemetry
    if os.environ.get(MIGRATED_ENV):
        store = store.model_copy(update={"migrate_on_start": False})
    if mode := os.environ.get(ACCESS_LOG_ENV):
        telemetry = telemetry.model_copy(update={"access_log": mode})
    return config.model_copy(update={"store": store, "telemetry": telemetry})


def serve_workers(workers: int, options: dict[str, Any]) -> None:
    """Run `workers` worker processes on one socket until a stop signal (uvicorn.run's
    own multi-process path, with SIGHUP passed on instead of restarting the workers)."""
    config = uvicorn.Config(
        "gateway.process.workers:app_from_env",
        factory=True,
        workers=workers,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
        **options,
    )
    warn_unless_spliced(config)
    warn_unless_bounded(config)
    run_dir = tempfile.mkdtemp(prefix="switchyard-run-")
    os.environ[RUN_DIR_ENV] = run_dir
    sock = config.bind_socket()
    try:
        _ReloadingSupervisor(config, sockets=[sock]).run()
    finally:
        sock.close()
        shutil.rmtree(run_dir, ignore_errors=True)


class _ReloadingSupervisor(Multiprocess):
    def handle_hup(self) -> None:
        """Every worker reloads its config in place; none is restarted."""
        for process in self.processes:
            if process.pid is not None and process.exitcode is None:
                os.kill(process.pid, signal.SIGHUP)
        logger.info("SIGHUP passed on to %d workers: each reloads its config", len(self.processes))

"""A config reload of every worker of `serve --workers N`, asked of whichever worker answers
`POST /v1/switchyard/admin/reload`.

That worker reads the file and validates it once, as a single process does: a file that
does not validate, or that only a restart can apply, is refused there (400, 409) and no
worker is asked. Otherwise it opens a request in the run directory the parent made
(`request.json`: an id and the digest of the bytes it validated), sends SIGHUP to the
parent, which passes it on to every worker (itself included), and waits up to
`REPORT_WAIT_S` for each worker's report. A worker told by SIGHUP while a request is open
reloads the file only if its bytes still have that digest, then writes how it went to its
own file (`worker-<pid>.json`, replaced whole). The answer counts the workers that took
the new config and names those that refused, with their reasons.

Files on this machine only, no port and no Redis. Each worker writes its file when it
starts and removes it when it stops; one that dies is not waited for, and one that says
nothing in time is listed as refused. One reload of all workers at a time: the answering
worker holds `reload.lock`, and another asked meanwhile is refused (409).
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import secrets
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from gateway.errors import (
    ConfigError,
    NotReloading,
    ReloadFailed,
    ReloadIncomplete,
    SwitchyardError,
)
from gateway.process.runtime import read_config
from gateway.telemetry.worker_files import pid_alive

if TYPE_CHECKING:
    from gateway.config.root import Config
    from gateway.process.runtime import Runtime

REPORT_WAIT_S = 30.0
"""How long the answering worker waits for every report: a reload opens the providers of
added backends and may start emulated engines; the parent passes a signal on within
half a second."""
_POLL_S = 0.05
_REQUEST = "request.json"
_LOCK = "reload.lock"


@dataclass(frozen=True, slots=True)
class WorkerReport:
    """How one worker's last reload went; `request`: the reload of all workers it was
    part of (None: the worker has just started)."""

    pid: int
    request: str | None
    took: bool = False
    summary: dict[str, object] | None = None
    """What it changed (`ReloadResult.as_dict()`), when it took the new config."""
    code: str | None = None
    error: str | None = None


class WorkerReloads:
    """One worker's part in reloads of all workers (see the module docstring)."""

    def __init__(
        self,
        run_dir: Path,
        config_path: Path,
        parse: Callable[[str, str], Config],
        *,
        parent_pid: int,
        wait_s: float = REPORT_WAIT_S,
        ask: Callable[[], None] | None = None,
    ) -> None:
        """`parse`: a config file's text and name to the config, as the worker runs it.
        `ask`: tells every worker to reload (default: SIGHUP to `parent_pid`)."""
        self._dir = run_dir
        self._path = config_path
        self._parse = parse
        self._parent = parent_pid
        self._wait_s = wait_s
        self._ask = ask or self._signal_parent
        self._pid = os.getpid()

    @contextmanager
    def registered(self) -> Iterator[None]:
        """This worker is waited for while the context is open."""
        self._write(WorkerReport(self._pid, None))
        try:
            yield
        finally:
            self._report_path(self._pid).unlink(missing_ok=True)

    def read(self, digest: str | None = None) -> tuple[Config, str]:
        """The config file, validated, and its bytes' digest; ConfigError when it does not
        validate, or when its digest is not `digest`."""
        source = str(self._path)
        try:
            raw = self._path.read_bytes()
        except OSError as exc:
            raise ConfigError(source, [f"(file): {exc.strerror}"]) from None
        found = hashlib.sha256(raw).hexdigest()
        if digest is not None and found != digest:
            raise ConfigError(source, ["(file): changed after the reload was validated"])
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(source, ["(file): not UTF-8 text"]) from None
        return self._parse(text, source), found

    async def on_hup(self, runtime: Runtime) -> None:
        """SIGHUP: reload the file (while a reload of all workers is open, the bytes it
        validated only) and report how it went to the worker waiting for it."""
        request, digest = await asyncio.to_thread(self._open_request)
        try:
            result = await runtime.reload(lambda: self.read(digest)[0])
        except SwitchyardError as exc:  # logged by the runtime; this worker's config stays
            report = WorkerReport(self._pid, request, code=exc.code, error=exc.message)
        else:
            report = WorkerReport(self._pid, request, took=True, summary=result.as_dict())
        if request is not None:
            await asyncio.to_thread(self._write, report)

    async def reload_all(self, runtime: Runtime) -> dict[str, object]:
        """Validate the file here, then have every worker reload it: this worker's summary
        and `workers` (`{"took": n, "refused": []}`). InvalidConfig, RestartRequired or
        NotReloading when no worker was asked; ReloadFailed when none took it,
        ReloadIncomplete when only some did (both with `workers`)."""
        with self._exclusive():
            config, digest = await read_config(self.read)
            runtime.check(config)
            request = secrets.token_hex(8)
            pids = await asyncio.to_thread(self._open, request, digest)
            try:
                self._ask()
                reports, gone = await self._gather(request, pids)
            finally:
                (self._dir / _REQUEST).unlink(missing_ok=True)
        return self._answer(pids, reports, gone)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        with (self._dir / _LOCK).open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise NotReloading("a reload of the workers is under way; ask again") from None
            yield  # the lock goes with the file's closing

    def _signal_parent(self) -> None:
        if os.getppid() != self._parent:  # never signal whoever adopted this worker
            raise NotReloading("the workers' parent process is gone")
        os.kill(self._parent, signal.SIGHUP)

    def _open(self, request: str, digest: str) -> set[int]:
        """Open the request; the workers to wait for (the live ones registered)."""
        _write_whole(self._dir / _REQUEST, {"request": request, "digest": digest})
        pids = set()
        for path in self._dir.glob("worker-*.json"):
            pid = int(path.stem.removeprefix("worker-"))
            if pid_alive(pid):
                pids.add(pid)
            else:  # died without removing its file
                path.unlink(missing_ok=True)
        return pids

    def _open_request(self) -> tuple[str | None, str | None]:
        """The open request's id and digest; (None, None) when there is none."""
        try:
            found = orjson.loads((self._dir / _REQUEST).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None, None
        return str(found["request"]), str(found["digest"])

    async def _gather(
        self, request: str, pids: set[int]
    ) -> tuple[dict[int, WorkerReport], set[int]]:
        """The reports of `request` in by the deadline, and the workers that died first."""
        deadline = time.monotonic() + self._wait_s
        while True:
            reports, gone = await asyncio.to_thread(self._reports, request, pids)
            if len(reports) + len(gone) == len(pids) or time.monotonic() >= deadline:
                return reports, gone
            await asyncio.sleep(_POLL_S)

    def _reports(self, request: str, pids: set[int]) -> tuple[dict[int, WorkerReport], set[int]]:
        reports: dict[int, WorkerReport] = {}
        gone: set[int] = set()
        for pid in pids:
            report = self._read_report(pid)
            if report is not None and report.request == request:
                reports[pid] = report
            elif not pid_alive(pid):
                gone.add(pid)
        return reports, gone

    def _answer(
        self, pids: set[int], reports: dict[int, WorkerReport], gone: set[int]
    ) -> dict[str, object]:
        took = [r for r in reports.values() if r.took]
        silent = pids - reports.keys() - gone
        refusals = sorted(
            [(r.pid, r.code, r.error) for r in reports.values() if not r.took]
            + [(pid, "worker_exited", "exited before it reported") for pid in gone]
            + [(pid, "no_report", f"no report within {self._wait_s:g} s") for pid in silent]
        )
        refused = [{"pid": pid, "code": code, "error": error} for pid, code, error in refusals]
        workers: dict[str, object] = {"took": len(took), "refused": refused}
        if took and not refused:
            own = reports.get(self._pid) or took[0]
            return {**(own.summary or {}), "workers": workers}
        reasons = "; ".join(f"pid {pid}: {error}" for pid, _, error in refusals)
        if not took:
            message = f"no worker took the new config, each serves the one it had: {reasons}"
            raise ReloadFailed(message, workers=workers)
        message = (
            f"{len(took)} of {len(pids)} workers took the new config; the others serve the "
            f"one they had: {reasons}"
        )
        raise ReloadIncomplete(message, workers=workers)

    def _read_report(self, pid: int) -> WorkerReport | None:
        try:
            return WorkerReport(**orjson.loads(self._report_path(pid).read_bytes()))
        except (OSError, orjson.JSONDecodeError, TypeError):
            return None

    def _write(self, report: WorkerReport) -> None:
        _write_whole(self._report_path(report.pid), asdict(report))

    def _report_path(self, pid: int) -> Path:
        return self._dir / f"worker-{pid}.json"


def _write_whole(path: Path, content: dict[str, object]) -> None:
    """Write `path` so that a reader finds the old content or the new, never a part."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_bytes(orjson.dumps(content))
    partial.replace(path)

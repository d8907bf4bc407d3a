"""Servers under test as subprocesses: start, wait until ready, read /proc, stop by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class StartError(RuntimeError):
    """A server did not come up; the message says why (and where its log is)."""


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class ProcSample:
    """CPU time (all threads, this process and its descendants) and memory at one moment."""

    cpu_s: float
    sys_s: float  # the part of cpu_s spent in the kernel (stime)
    rss_kb: int
    hwm_kb: int
    processes: int


def _stat_fields(pid: int) -> list[str]:
    # The command name (field 2) may hold spaces; everything after the last ')' is safe.
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.rindex(")") + 2 :].split()


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid`` (children, grandchildren, ...)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(_stat_fields(int(entry))[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    frontier = [pid]
    while frontier:
        children = parents.get(frontier.pop(), [])
        found.extend(children)
        frontier.extend(children)
    return found


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on 127.0.0.1:`port` or on every address (Linux /proc/net)."""
    wanted = {f"0100007F:{port:04X}", f"00000000:{port:04X}"}
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                ipv6_any = local == f"{'0' * 32}:{port:04X}"
                if state == "0A" and (local in wanted or ipv6_any):  # 0A: LISTEN
                    inodes.add(inode)
    return inodes


def owns_port(pid: int, port: int) -> bool | None:
    """Whether `pid` or one of its descendants holds the socket listening on `port`: a
    server whose port was taken in the moment between `free_port` and its bind must not
    mistake the other server for itself. None where /proc cannot tell (not Linux)."""
    if not Path("/proc/net/tcp").exists():
        return None
    inodes = _listening_inodes(port)
    for owner in (pid, *descendants(pid)):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{owner}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{owner}/fd/{fd}")
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        return True
    return False


def _cpu_ticks(pid: int) -> tuple[int, int]:
    """(user + system, system) clock ticks, counting children it has reaped."""
    fields = _stat_fields(pid)
    # Fields 14-17 of proc(5): utime, stime, cutime, cstime (the last two: reaped children).
    user = int(fields[11]) + int(fields[13])
    system = int(fields[12]) + int(fields[14])
    return user + system, system


def _status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def sample(pid: int) -> ProcSample:
    """Sum over the process tree; peak RSS of a tree is the sum of each member's peak."""
    ticks, sys_ticks = _cpu_ticks(pid)
    rss = _status_kb(pid, "VmRSS")
    hwm = _status_kb(pid, "VmHWM")
    children = descendants(pid)
    for child in children:
        try:
            child_ticks, child_sys = _cpu_ticks(child)
            ticks, sys_ticks = ticks + child_ticks, sys_ticks + child_sys
            rss += _status_kb(child, "VmRSS")
            hwm += _status_kb(child, "VmHWM")
        except (OSError, ValueError, IndexError):
            continue  # it exited between listing and reading
    return ProcSample(
        ticks / CLOCK_TICKS_PER_S, sys_ticks / CLOCK_TICKS_PER_S, rss, hwm, 1 + len(children)
    )


def thread_run_s(pid: int) -> tuple[float, int]:
    """(seconds on a CPU, times scheduled in) summed over the live threads of `pid`, from
    /proc/PID/task/*/schedstat: nanosecond resolution, where /proc/PID/stat counts 10 ms
    ticks (too coarse for a few idle seconds)."""
    run_ns = slices = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue  # the thread ended between listing and reading
        run_ns += int(fields[0])
        slices += int(fields[2])
    return run_ns / 1e9, slices


def http_get_ok(url: str, timeout_s: float = 2.0) -> bool:
    try:
        with _NO_PROXY.open(url, timeout=timeout_s) as response:
            status: int = response.status
            return status == 200
    except (OSError, urllib.error.URLError):
        return False


class Server:
    """One server subprocess, known by its PID; output goes to a log file, never a pipe."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: Mapping[str, str] | None = None,
        cpus: set[int] | None = None,
    ) -> None:
        self.name = name
        self.log_path = log_path
        self._log = log_path.open("wb")
        # A new session: Ctrl-C in the terminal reaches only the bench, which stops us by PID.
        self._popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
        self.pid = self._popen.pid
        if cpus:
            _pin(self.pid, cpus)

    def exited(self) -> bool:
        """Whether the process has ended."""
        return self._popen.poll() is not None

    def wait_ready(self, url: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._popen.poll() is not None:
                raise StartError(
                    f"{self.name} exited with {self._popen.returncode}; {self._tail()}"
                )
            if http_get_ok(url):
                port = urllib.parse.urlsplit(url).port
                if port is None or owns_port(self.pid, port) is not False:
                    return
                raise StartError(
                    f"{self.name}: another process answers on port {port} (taken between "
                    f"choosing it and binding it); {self._tail()}"
                )
            time.sleep(0.1)
        raise StartError(f"{self.name} not ready after {timeout_s:.0f} s; {self._tail()}")

    def _tail(self) -> str:
        self._log.flush()
        lines = self.log_path.read_text(errors="replace").strip().splitlines()[-3:]
        return f"log {self.log_path}: " + " | ".join(lines)

    def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``grace_s``; descendants it leaves behind are killed too."""
        children = [(pid, _start_time(pid)) for pid in descendants(self.pid)]
        if self._popen.poll() is None:
            _signal(self.pid, signal.SIGTERM)
            try:
                self._popen.wait(grace_s)
            except subprocess.TimeoutExpired:
                _signal(self.pid, signal.SIGKILL)
                self._popen.wait(grace_s)
        for child, started in children:
            if started is not None and _start_time(child) == started:  # not a reused PID
                _signal(child, signal.SIGKILL)
        self._log.close()


def _start_time(pid: int) -> str | None:
    try:
        return _stat_fields(pid)[19]  # field 22 of proc(5): start time since boot
    except (OSError, IndexError):
        return None


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _pin(pid: int, cpus: set[int]) -> None:
    available = os.sched_getaffinity(0)
    if cpus <= available and len(available) > 1:
        os.sched_setaffinity(pid, cpus)


def pin_self(cpus: set[int] | None) -> None:
    """Pin the calling process (the load generator) if ``cpus`` exist on this machine."""
    if cpus:
        _pin(os.getpid(), cpus)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def install_interrupts() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt, so a run's `finally` stops its servers.
    Explicitly: a shell may start a bench with SIGINT ignored, and SIGTERM must clean up
    too. (Closing an event loop resets them: install again after one.)"""
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)


def run_measured(
    run: Callable[[Path], Coroutine[Any, Any, dict[str, Any]]],
    render: Callable[[dict[str, Any]], str],
    *,
    cpus: set[int],
    prefix: str,
    json_path: Path | None,
) -> int:
    """A side-by-side bench's main: interrupts stop it cleanly, the load generator pinned to
    `cpus`, `run` given a scratch folder on uvloop, its summary printed by `render` and
    written as JSON to `json_path` when given."""
    import json
    import tempfile

    import uvloop

    install_interrupts()
    pin_self(cpus)
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        summary = uvloop.run(run(Path(tmp)))
    print(render(summary))
    if json_path is not None:
        json_path.write_text(json.dumps(summary, indent=2) + "\n")
    return 0

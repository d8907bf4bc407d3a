"""Stopping processes by PID: SIGTERM, a grace period, then SIGKILL; and telling whether a
PID from the state file is still one of our replicas before signalling it.

A PID outlives its process in a state file: after a reboot or a crash the number may belong
to someone else's program, so `stop` signals it only when its command line (Linux: /proc)
still names the replica module and its port.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

REPLICA_MODULE = "gateway.engines.replica_main"
GRACE_S = 10.0
KILL_WAIT_S = 5.0
POLL_S = 0.05


def is_running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie child is reaped and counts as gone)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:  # not our child: its own parent reaps it
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but another user's
        return True
    return _proc_state(pid) not in ("Z", "X")


def _proc_state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[0]


def command_line(pid: int) -> list[str] | None:
    """The process's argv (Linux), or None where /proc cannot tell."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def is_replica(pid: int, port: int) -> bool:
    """Whether `pid` is alive and still a replica serving `port`. Without /proc (macOS)
    a live PID is trusted, as the state file says."""
    if not is_running(pid):
        return False
    argv = command_line(pid)
    if argv is None:
        return not Path("/proc/self").exists()
    return REPLICA_MODULE in argv and _flag(argv, "--port") == str(port)


def _flag(argv: list[str], name: str) -> str | None:
    return next((argv[i + 1] for i in range(len(argv) - 1) if argv[i] == name), None)


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while is_running(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


def stop_pid(pid: int, *, grace_s: float = GRACE_S) -> bool:
    """SIGTERM `pid`, SIGKILL it if it is still there after `grace_s`; True when it was
    running. Raises `TimeoutError` when even SIGKILL did not end it."""
    if not is_running(pid):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
        if _wait_gone(pid, grace_s):
            return True
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    if not _wait_gone(pid, KILL_WAIT_S):
        raise TimeoutError(f"process {pid} survived SIGKILL")
    return True


def stop_child(process: subprocess.Popen[bytes], *, grace_s: float = GRACE_S) -> None:
    """The same for a child this process started, reaped through its `Popen`."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=KILL_WAIT_S)

"""Stopping by PID, and telling a replica's PID from a stranger's before signalling it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from gateway.engines.processes import REPLICA_MODULE, is_replica, is_running, stop_pid

SLEEP = "import time; time.sleep(120)"
IGNORE_TERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ignoring', flush=True); time.sleep(120)"
)


@contextmanager
def dummy(code: str, *argv: str) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def test_stop_by_pid_ends_a_sleeping_process() -> None:
    with dummy(SLEEP) as process:
        assert is_running(process.pid)
        assert stop_pid(process.pid) is True
        assert not is_running(process.pid)


def test_sigkill_after_the_grace_period() -> None:
    with dummy(IGNORE_TERM) as process:
        # Once it ignores SIGTERM, only the SIGKILL after the grace period ends it.
        assert process.stdout is not None
        assert process.stdout.readline() == b"ignoring\n"
        assert stop_pid(process.pid, grace_s=0.5) is True
        assert not is_running(process.pid)


def test_a_gone_process_is_not_stopped() -> None:
    with dummy("pass") as process:
        process.wait()
        assert stop_pid(process.pid) is False


def test_only_a_replica_on_its_port_counts_as_ours() -> None:
    with dummy(SLEEP, REPLICA_MODULE, "--port", "41234") as process:
        assert is_replica(process.pid, 41234)
        assert not is_replica(process.pid, 41235)
    with dummy(SLEEP, "--port", "41234") as stranger:
        assert not is_replica(stranger.pid, 41234)

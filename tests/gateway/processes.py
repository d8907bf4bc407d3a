"""`switchyard serve` / `emulate` as real processes in tests: started with their output in a
log file, waited for, and always stopped by PID."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
STOP_TIMEOUT_S = 10.0
START_TIMEOUT_S = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def switchyard_command() -> list[str]:
    """The installed console script when there is one, else the module."""
    script = shutil.which("switchyard", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "gateway.cli"]


@contextmanager
def running(
    args: list[str], log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Start `switchyard ARGS` with stdout+stderr to `log`; always stopped by PID."""
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [*switchyard_command(), *args],
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env={**os.environ, **(env or {})},
        )
        try:
            yield proc
        finally:
            stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=STOP_TIMEOUT_S)
    return proc.returncode


def wait_ready(
    url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = START_TIMEOUT_S
) -> None:
    """Until `url` answers 200; fails with the log if the process exits or takes too long."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(trust_env=False, timeout=1.0) as http:
        while True:
            assert proc.poll() is None, f"exited with {proc.returncode}:\n{log.read_text()}"
            try:
                if http.get(url).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"not ready in time:\n{log.read_text()}"
            time.sleep(0.05)


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0

"""Private Redis and PostgreSQL servers for outage scenarios, never the machine's shared
ones: each on its own loopback port and temporary directory, stopped and started again by
this benchmark only."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import asyncpg

from bench.procs import Server, StartError, free_port

_PG_USER = "postgres"


class PrivateRedis:
    """redis-server without persistence on a free port; `stop()` and `start()` again."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._workdir = workdir
        self._server: Server | None = None
        self._starts = 0

    def start(self, timeout_s: float = 20.0) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise StartError("redis-server is not installed")
        argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--save", "", "--appendonly", "no", "--dir", str(self._workdir)]
        self._starts += 1
        log = self._workdir / f"redis-{self._starts}.log"
        self._server = Server("redis", argv, log)
        deadline = time.monotonic() + timeout_s
        while not _redis_pong(self.port):
            if time.monotonic() > deadline:
                self.stop()
                raise StartError(f"private redis not ready on {self.port}; log {log}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None


def _redis_pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def pg_bin(name: str) -> str:
    """A PostgreSQL program: the newest /usr/lib/postgresql/*/bin, else PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    if found:
        return str(found[-1])
    on_path = shutil.which(name)
    if on_path is None:
        raise StartError(f"PostgreSQL's {name} not found (/usr/lib/postgresql/*/bin or PATH)")
    return on_path


class PrivatePostgres:
    """A throwaway PostgreSQL cluster (initdb into a temp dir, trust auth, fsync off).

    As root, its commands run as the `postgres` user (initdb refuses root)."""

    def __init__(self) -> None:
        self.port = free_port()
        # Its own directory: the bench's is private to root, which `postgres` cannot enter.
        self._dir = Path(tempfile.mkdtemp(prefix="switchyard-pg-"))
        self._data = self._dir / "data"
        self.url = f"postgresql+asyncpg://{_PG_USER}@127.0.0.1:{self.port}/postgres"
        self._pid: int | None = None  # the postmaster's, while it runs

    def _run(self, argv: list[str], timeout_s: float = 120.0) -> None:
        if os.geteuid() == 0:
            argv = ["runuser", "-u", _PG_USER, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        if done.returncode != 0:
            raise StartError(f"{' '.join(argv[-4:])}: {done.stderr.strip()[-300:]}")

    def create(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self._dir, _PG_USER)
        initdb = [pg_bin("initdb"), "-D", str(self._data), "-A", "trust", "-U", _PG_USER]
        self._run([*initdb, "--no-sync"])

    def start(self) -> None:
        options = f"-p {self.port} -k {self._dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self._dir / "postgres.log")
        pg_ctl = [pg_bin("pg_ctl"), "-D", str(self._data), "-o", options, "-l", log]
        self._run([*pg_ctl, "-w", "start"])
        self._pid = int((self._data / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        """Fast shutdown: open sessions are ended, as when the database is taken down."""
        pid, self._pid = self._pid, None
        if pid is None:
            return
        if (self._data / "postmaster.pid").exists():
            self._run([pg_bin("pg_ctl"), "-D", str(self._data), "-m", "fast", "-w", "stop"])
            return
        if _is_ours(pid, self._data):  # its files were deleted under it: by its PID
            os.kill(pid, signal.SIGINT)  # PostgreSQL's fast shutdown
            deadline = time.monotonic() + 30
            while _is_ours(pid, self._data) and time.monotonic() < deadline:
                time.sleep(0.1)

    def remove(self) -> None:
        """Stop the cluster if it runs, then delete its files."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)

    async def decision_ids(self) -> list[str]:
        """The `decision_id` of every row of the `requests` table."""
        conn = await asyncpg.connect(
            host="127.0.0.1", port=self.port, user=_PG_USER, database="postgres", timeout=5
        )
        try:
            rows = await conn.fetch("SELECT decision_id FROM requests")
        finally:
            await conn.close()
        return [str(row["decision_id"]) for row in rows]


def _is_ours(pid: int, data: Path) -> bool:
    """Whether `pid` is still the postmaster serving `data` (not a reused PID)."""
    try:
        return str(data).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False

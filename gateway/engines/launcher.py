"""Starting N llama.cpp replicas on free loopback ports, each a child process with its own
log, waiting until each answers `/health`, and stopping them.

Synchronous on purpose: it runs before any gateway or event loop exists (the CLI, a test
fixture's set-up, a benchmark's preparation), and what it waits on is other processes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from gateway.engines.errors import ReplicaStartError
from gateway.engines.gguf_meta import GgufError, read_kv_shape
from gateway.engines.processes import REPLICA_MODULE, stop_child
from gateway.engines.state import HOST, Replica

READY_TIMEOUT_S = 120.0
HEALTH_TIMEOUT_S = 2.0
POLL_S = 0.1
PORT_ATTEMPTS = 3
"""A free port may be taken between choosing it and the replica binding it: try again."""
LOG_TAIL_LINES = 5


class ReplicaOptions(BaseModel):
    """How each replica runs; every replica of a start gets the same."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_path: Path
    ctx_size: int = Field(2048, ge=128, description="Tokens per sequence (per slot).")
    parallel: int = Field(1, ge=1, le=64, description="Slots: sequences decoded at once.")
    threads: int = Field(1, ge=1, le=256, description="CPU threads per replica.")
    cache_ram_mib: int = Field(
        64, ge=0, description="Host memory for prompts evicted from the slots; 0: none."
    )
    cache_type_k: Literal["f16", "q8_0", "q4_0"] | None = None
    chat_template: str | None = Field(None, description="A llama.cpp built-in template name.")
    alias: str | None = Field(None, min_length=1, description="Default: the file's stem.")

    @property
    def model_alias(self) -> str:
        """The model id the replicas answer to and the gateway config asks for."""
        return self.alias or self.model_path.stem.lower()


_K_ELEMENT_BYTES = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}
"""Bytes per key value for each `--cache-type-k` (q8_0 and q4_0 store blocks of 32)."""
MIB = 1 << 20


def host_cache_tokens(options: ReplicaOptions) -> int:
    """Prompt tokens the replica's host-memory cache (`cache_ram_mib`) holds, from the KV
    shape in the model file's metadata; 0 when it has none or the file does not say."""
    if options.cache_ram_mib <= 0:
        return 0
    try:
        shape = read_kv_shape(options.model_path)
    except GgufError:
        return 0
    key_bytes = _K_ELEMENT_BYTES[options.cache_type_k or "f16"]
    per_head = shape.key_length * key_bytes + shape.value_length * 2.0
    per_token = shape.layers * shape.kv_heads * per_head
    return int(options.cache_ram_mib * MIB // per_token)


@dataclass(frozen=True)
class LaunchedReplica:
    """A replica with the `Popen` that started it, to stop and reap it from here."""

    replica: Replica
    process: subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
    return port


def replica_command(options: ReplicaOptions, port: int, *, exit_with_parent: bool) -> list[str]:
    command = [sys.executable, "-m", REPLICA_MODULE, "--model", str(options.model_path)]
    command += ["--port", str(port), "--threads", str(options.threads)]
    command += ["--parallel", str(options.parallel), "--ctx-size", str(options.ctx_size)]
    command += ["--cache-ram-mib", str(options.cache_ram_mib), "--alias", options.model_alias]
    if options.cache_type_k:
        command += ["--cache-type-k", options.cache_type_k]
    if options.chat_template:
        command += ["--chat-template", options.chat_template]
    return command + (["--exit-with-parent"] if exit_with_parent else [])


def _child_env() -> dict[str, str]:
    # The child imports this same `gateway`, whether installed or run from a checkout.
    source_root = str(Path(__file__).resolve().parents[2])  # the checkout holding `gateway/`
    path = os.pathsep.join(p for p in (source_root, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}


def spawn(
    name: str, options: ReplicaOptions, log_dir: Path, *, exit_with_parent: bool
) -> LaunchedReplica:
    """Start one replica on a free port, its output appended to `LOG_DIR/NAME.log`. Its own
    session: a Ctrl-C meant for the terminal's foreground job does not reach it."""
    port = free_port()
    log_path = log_dir / f"{name}.log"
    with log_path.open("ab") as sink:
        process = subprocess.Popen(
            replica_command(options, port, exit_with_parent=exit_with_parent),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=_child_env(),
            start_new_session=True,
        )
    replica = Replica(
        name=name,
        port=port,
        pid=process.pid,
        n_ctx=options.ctx_size,
        parallel=options.parallel,
        host_cache_tokens=host_cache_tokens(options),
        log_path=log_path.resolve(),
    )
    return LaunchedReplica(replica, process)


def healthy(replica: Replica, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
    """Whether `/health` answers 200 (llama.cpp says 503 while it loads the model)."""
    try:
        return httpx.get(replica.origin + "/health", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return " | ".join(text.strip().splitlines()[-lines:])


def _port_taken(path: Path) -> bool:
    return "couldn't bind" in log_tail(path, lines=20)


def _await_ready(launched: LaunchedReplica, deadline: float, timeout_s: float) -> bool:
    """True when the replica answers `/health`; False when it exited because its port was
    taken (start it again elsewhere); else `ReplicaStartError` naming its log."""
    replica, process = launched.replica, launched.process
    while True:
        code = process.poll()
        if code is not None:
            if _port_taken(replica.log_path):
                return False
            raise ReplicaStartError(
                f"{replica.name} exited with code {code} before it was ready; "
                f"log {replica.log_path}: {log_tail(replica.log_path)}"
            )
        if healthy(replica):
            return True
        if time.monotonic() >= deadline:
            raise ReplicaStartError(
                f"{replica.name} did not answer {replica.origin}/health within "
                f"{timeout_s:.0f} s; log {replica.log_path}: {log_tail(replica.log_path)}"
            )
        time.sleep(POLL_S)


def _ready(
    launched: LaunchedReplica,
    options: ReplicaOptions,
    log_dir: Path,
    *,
    exit_with_parent: bool,
    deadline: float,
    timeout_s: float,
) -> LaunchedReplica:
    name = launched.replica.name
    for attempt in range(PORT_ATTEMPTS):
        if attempt:
            launched = spawn(name, options, log_dir, exit_with_parent=exit_with_parent)
        try:
            if _await_ready(launched, deadline, timeout_s):
                return launched
        except BaseException:
            stop_child(launched.process)  # a replacement is not in the caller's list
            raise
    raise ReplicaStartError(f"{name}: its port was taken {PORT_ATTEMPTS} times; log {log_dir}")


def start_replicas(
    count: int,
    options: ReplicaOptions,
    *,
    log_dir: Path,
    name_prefix: str = "llama",
    exit_with_parent: bool = False,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> list[LaunchedReplica]:
    """Start `count` replicas named `PREFIX-1` ... and return once every one answers
    `/health`. On any failure every replica started so far is stopped before the error
    (`ReplicaStartError`, naming the failed replica's log) propagates."""
    log_dir.mkdir(parents=True, exist_ok=True)
    started: list[LaunchedReplica] = []
    try:
        for i in range(1, count + 1):
            name = f"{name_prefix}-{i}"
            started.append(spawn(name, options, log_dir, exit_with_parent=exit_with_parent))
        deadline = time.monotonic() + ready_timeout_s
        for i, launched in enumerate(started):
            started[i] = _ready(
                launched,
                options,
                log_dir,
                exit_with_parent=exit_with_parent,
                deadline=deadline,
                timeout_s=ready_timeout_s,
            )
    except BaseException:
        stop_launched(started)
        raise
    return started


def stop_launched(launched: Sequence[LaunchedReplica]) -> None:
    """Stop every replica, in order, each with SIGTERM then SIGKILL after a grace period."""
    for item in launched:
        stop_child(item.process)


@contextmanager
def running_replicas(
    count: int,
    model_path: Path,
    *,
    ctx_size: int = 2048,
    cache_ram_mib: int = 64,
    parallel: int = 1,
    log_dir: Path | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> Iterator[list[Replica]]:
    """`count` ready replicas of `model_path`, one CPU thread each, stopped on exit, also
    when the body raises. They also stop on their own when this process dies (they watch
    their parent). Without `log_dir` their logs go to a temporary folder, removed after."""
    options = ReplicaOptions(
        model_path=model_path, ctx_size=ctx_size, cache_ram_mib=cache_ram_mib, parallel=parallel
    )
    with ExitStack() as stack:
        if log_dir is None:
            log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="replicas-")))
        launched = start_replicas(
            count,
            options,
            log_dir=log_dir,
            exit_with_parent=True,
            ready_timeout_s=ready_timeout_s,
        )
        stack.callback(stop_launched, launched)
        yield [item.replica for item in launched]

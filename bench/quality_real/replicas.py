"""Replicas with one setup each: started with `bench.quality_real.engine`, on loopback,
ready when `/health` answers, stopped by their own `Popen` (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gateway.engines.errors import ReplicaStartError
from gateway.engines.launcher import free_port, healthy, log_tail
from gateway.engines.processes import stop_child
from gateway.engines.state import Replica

ENGINE_MODULE = "bench.quality_real.engine"
READY_TIMEOUT_S = 120.0
_POLL_S = 0.1
_REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class EngineSetup:
    """How one replica serves the model; the defaults are a healthy replica's, as
    `switchyard engines start` runs it (one thread, one slot, f16 KV, the GGUF's template)."""

    ctx_size: int = 2048
    threads: int = 1
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    flash_attn: str | None = None
    """auto (llama.cpp's default: on where the backend supports it), on, off."""
    chat_template: str | None = None
    jinja: bool = True

    def arguments(self) -> list[str]:
        """The engine's command-line flags for this setup."""
        args = ["--ctx-size", str(self.ctx_size), "--threads", str(self.threads)]
        for flag, value in (
            ("--cache-type-k", self.cache_type_k),
            ("--cache-type-v", self.cache_type_v),
            ("--flash-attn", self.flash_attn),
            ("--chat-template", self.chat_template),
        ):
            if value is not None:
                args += [flag, value]
        return args if self.jinja else [*args, "--no-jinja"]


def engine_command(model: Path, port: int, setup: EngineSetup) -> list[str]:
    command = [sys.executable, "-m", ENGINE_MODULE, "--model", str(model), "--port", str(port)]
    return [*command, "--alias", "smollm2", *setup.arguments(), "--exit-with-parent"]


@contextmanager
def running_engine(name: str, model: Path, setup: EngineSetup, log_dir: Path) -> Iterator[Replica]:
    """One ready replica of `model` served as `setup` says, stopped on exit."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = (log_dir / f"{name}.log").resolve()
    port = free_port()
    with log_path.open("ab") as sink:
        process = subprocess.Popen(
            engine_command(model, port, setup),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=_REPO,
            start_new_session=True,
        )
    replica = Replica(
        name=name, port=port, pid=process.pid, n_ctx=setup.ctx_size, log_path=log_path
    )
    try:
        _await_ready(replica, process)
        yield replica
    finally:
        stop_child(process)


def _await_ready(replica: Replica, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not healthy(replica):
        code = process.poll()
        if code is not None or time.monotonic() > deadline:
            why = f"exited with code {code}" if code is not None else "never answered /health"
            raise ReplicaStartError(
                f"{replica.name} {why}; log {replica.log_path}: {log_tail(replica.log_path)}"
            )
        time.sleep(_POLL_S)

"""SGLang's router (`sglang-router` from PyPI, in its own venv) in front of the emulators.

It is started without a model or tokenizer path, so it has nothing to download; its cache
-aware policy works on request text. Workers are given without `/v1` (it appends the
OpenAI path itself) and it forwards the request's `model` unchanged, so the emulators
serve the route name too. Metrics and API both bind 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bench.procs import Server, StartError, free_port

from .fleet import local_env

BENCH_DIR = Path(__file__).resolve().parent.parent
SGLANG_VENV = BENCH_DIR / ".venv-sglang"
SGLANG_REQUIREMENT = "sglang-router"
READY_TIMEOUT_S = 60.0
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def ensure_sglang_router(log_path: Path) -> Path:
    """The venv's python, with sglang-router installed there on first use."""
    python = SGLANG_VENV / "bin" / "python"
    if _importable(python):
        return python
    with log_path.open("ab") as log:
        if not python.exists():
            venv = [sys.executable, "-m", "venv", str(SGLANG_VENV)]
            subprocess.run(venv, stdout=log, stderr=subprocess.STDOUT, check=False, timeout=300)
        pip = [str(python), "-m", "pip", "install", "-q", SGLANG_REQUIREMENT]
        subprocess.run(pip, stdout=log, stderr=subprocess.STDOUT, check=False, timeout=1800)
    if not _importable(python):
        tail = log_path.read_text(errors="replace").strip().splitlines()[-2:]
        raise StartError(f"pip install {SGLANG_REQUIREMENT} failed: {' | '.join(tail)}")
    return python


def _importable(python: Path) -> bool:
    if not python.exists():
        return False
    probe = [str(python), "-c", "import sglang_router.launch_router"]
    return subprocess.run(probe, capture_output=True, check=False, timeout=120).returncode == 0


def sglang_version(python: Path) -> str | None:
    code = "import importlib.metadata as m; print(m.version('sglang-router'))"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


def router_argv(python: Path, worker_urls: list[str], port: int, metrics_port: int) -> list[str]:
    return [
        str(python), "-m", "sglang_router.launch_router",
        "--host", "127.0.0.1", "--port", str(port),
        "--worker-urls", *worker_urls,
        "--policy", "cache_aware",
        "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port),
        # Workers are up before the router starts; the default re-checks every 30 s.
        "--worker-startup-check-interval", "1",
        "--history-backend", "none",
        "--log-level", "warn",
    ]  # fmt: skip


def start_sglang_router(worker_urls: list[str], workdir: Path) -> tuple[Server, int, str | None]:
    """Start the router; ready once /readiness counts every worker healthy."""
    python = ensure_sglang_router(workdir / "sglang-install.log")
    version = sglang_version(python)
    port, metrics_port = free_port(), free_port()
    argv = router_argv(python, worker_urls, port, metrics_port)
    server = Server("sglang-router", argv, workdir / "sglang-router.log", env=local_env())
    try:
        server.wait_ready(f"http://127.0.0.1:{port}/liveness", READY_TIMEOUT_S)
        _wait_workers(port, len(worker_urls))
    except BaseException:  # Ctrl-C too: nobody else knows this PID yet
        server.stop()
        raise
    return server, port, version


def _wait_workers(port: int, count: int) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if _healthy_workers(port) >= count:
            return
        time.sleep(0.2)
    raise StartError(f"sglang-router: fewer than {count} healthy workers after {READY_TIMEOUT_S} s")


def _healthy_workers(port: int) -> int:
    try:
        with _NO_PROXY.open(f"http://127.0.0.1:{port}/readiness", timeout=2) as response:
            healthy = json.load(response).get("healthy_workers", 0)
    except (OSError, ValueError, AttributeError):
        return 0
    return healthy if isinstance(healthy, int) else 0

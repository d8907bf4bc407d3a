"""`serve --workers 2`: every scrape of /metrics counts the requests of both workers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from tests.gateway.telemetry.test_metrics_endpoint import samples, total

CONFIG = {
    "backends": [
        {"name": "e1", "kind": "emulated", "models": ["m"], "emulator": {"token_delay_ms": 0}},
    ],
    "routes": [{"name": "default", "model": "m", "backends": ["e1"]}],
    "profiles": [{"name": "balanced", "plugins": [{"ref": "least-load-scorer"}]}],
    "health": {"active_probes": False},
    "quality": {"enabled": False},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_metrics_add_up_across_workers(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    port = free_port()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom")}
    (tmp_path / "prom").mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gateway.cli",
            "serve",
            "--config",
            str(config),
            "--port",
            str(port),
            "--workers",
            "2",
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base, proc)
        pids = set()
        body = {
            "model": "default",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 2,
        }
        for _ in range(24):
            # A new connection per request, so the kernel spreads them over both workers.
            with httpx.Client(base_url=base, timeout=10) as client:
                assert client.post("/v1/chat/completions", json=body).status_code == 200
                pids.add(client.get("/v1/switchyard/dashboard").json()["worker"]["pid"])
        time.sleep(0.5)  # each worker's telemetry thread drains every 50 ms
        counts = []
        for _ in range(6):
            with httpx.Client(base_url=base, timeout=10) as client:
                text = client.get("/metrics").text
            counts.append(total(samples(text), "switchyard_requests_total", route="default"))
        assert counts == [24.0] * 6, (counts, pids)
        assert len(pids) == 2  # both workers answered, and still every scrape saw all 24
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_ready(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode() if proc.stderr else "exited")
        try:
            if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("gateway with 2 workers did not become ready")

"""The Kubernetes reloader sidecar (deploy/kubernetes/config/reload_on_change.py) against a
real `switchyard serve`: a changed file is reloaded, also when the gateway answers only
later; a file the gateway refuses is asked for once; SIGTERM ends the sidecar at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.conftest import until
from tests.gateway.processes import free_port, running, stop, wait_ready

SCRIPT = Path(__file__).resolve().parents[2] / "deploy/kubernetes/config/reload_on_change.py"
CLIENT, ADMIN = "client-key-1", "admin-key-1"
ENV = {"SY_K8S_CLIENT_KEYS": CLIENT, "SY_K8S_ADMIN_KEYS": f"{ADMIN},admin-key-2"}


def _config(routes: dict[str, list[str]], **server: Any) -> str:
    backend = {"kind": "emulated", "models": ["m"], "emulator": {"token_delay_ms": 1}}
    config = {
        "server": {
            "api_keys_env": "SY_K8S_CLIENT_KEYS",
            "admin_keys_env": "SY_K8S_ADMIN_KEYS",
            **server,
        },
        "backends": [{"name": "e1", **backend}],
        "routes": [{"name": n, "model": "m", "backends": b} for n, b in routes.items()],
        "health": {"active_probes": False},
        "quality": {"enabled": False},
    }
    return yaml.safe_dump(config)


@contextmanager
def _reloader(config: Path, port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "SWITCHYARD_CONFIG": str(config),
        "SWITCHYARD_RELOAD_URL": f"http://127.0.0.1:{port}/v1/switchyard/admin/reload",
        "SWITCHYARD_ADMIN_KEYS": ENV["SY_K8S_ADMIN_KEYS"],
        "SWITCHYARD_RELOAD_INTERVAL_S": "0.1",
    }
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPT)], stdout=sink, stderr=subprocess.STDOUT, env=env
        )
        try:
            yield proc
        finally:
            stop(proc)


def _models(base: str) -> set[str]:
    headers = {"authorization": f"Bearer {CLIENT}"}
    answer = httpx.get(f"{base}/v1/models", headers=headers, timeout=5, trust_env=False)
    return {model["id"] for model in answer.json()["data"]}


def test_the_reloader_reloads_its_gateway_when_the_file_changes(tmp_path: Path) -> None:
    path, port = tmp_path / "config.yaml", free_port()
    base = f"http://127.0.0.1:{port}"
    path.write_text(_config({"default": ["e1"]}))
    sidecar_log, serve_log = tmp_path / "reloader.log", tmp_path / "serve.log"
    with _reloader(path, port, sidecar_log) as sidecar:
        until(lambda: "watching" in sidecar_log.read_text(), "the reloader watching")
        # Changed before the gateway listens: asked again, backing off, until it answers.
        path.write_text(_config({"default": ["e1"], "second": ["e1"]}))
        until(lambda: "not answered" in sidecar_log.read_text(), "a refused connection")
        command = ["serve", "--config", str(path), "--port", str(port)]
        with running(command, serve_log, ENV) as gateway:
            wait_ready(f"{base}/readyz", gateway, serve_log)
            until(lambda: "generation 2" in sidecar_log.read_text(), "the first reload", 40)
            assert _models(base) == {"default", "second"}

            path.write_text(_config({"default": ["e1"], "third": ["e1"]}))
            until(lambda: _models(base) == {"default", "third"}, "the route swapped")
            assert "routes: 1 added, 1 removed, 1 unchanged" in sidecar_log.read_text()

            # Refused for good: logged with the gateway's reasons, not asked again.
            path.write_text(_config({"default": ["e1"], "fourth": ["ghost"]}))
            until(lambda: "reload 400 invalid_config" in sidecar_log.read_text(), "refused")
            path.write_text(_config({"default": ["e1"], "third": ["e1"]}, keep_alive_s=30))
            until(lambda: "reload 409 restart_required" in sidecar_log.read_text(), "409")
            time.sleep(1.0)  # ten intervals
            text = sidecar_log.read_text()
            assert text.count("invalid_config") == text.count("restart_required") == 1
            assert "ghost" in text and "kubectl rollout restart" in text
            assert serve_log.read_text().count("config reload refused") == 2  # one per file
            assert _models(base) == {"default", "third"}
            assert ADMIN not in text and CLIENT not in text

            path.write_text(_config({"default": ["e1"]}))
            until(lambda: _models(base) == {"default"}, "a later change still reloaded")
        sidecar.send_signal(signal.SIGTERM)
        assert sidecar.wait(timeout=5) == 0

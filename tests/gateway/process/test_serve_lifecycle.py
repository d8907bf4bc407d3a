"""`switchyard serve` as a real process: SIGHUP reloads its config file (a bad file changes
nothing), SIGTERM flips /readyz, drains, ends a stream past the deadline with an error
event, then exits."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.conftest import until
from tests.gateway.processes import free_port, running, wait_ready

CONFIG: dict[str, Any] = {
    "server": {"shutdown_drain_s": 1.0},
    "backends": [
        {
            "name": "e1",
            "kind": "emulated",
            "models": ["m"],
            # Each stream stops after its second chunk: longer than the drain deadline.
            "emulator": {
                "token_delay_ms": 1,
                "faults": {"stall_mid_stream_after_chunks": 2, "stall_mid_stream_s": 60},
            },
        },
    ],
    "routes": [{"name": "default", "model": "m", "backends": ["e1"]}],
    "profiles": [{"name": "balanced", "plugins": [{"ref": "least-load-scorer"}]}],
    "health": {"active_probes": False},
    "quality": {"enabled": False},
}


def _chat(model: str, stream: bool = False) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 8,
        "stream": stream,
    }


def _served(http: httpx.Client, model: str) -> int:
    return http.post("/v1/chat/completions", json=_chat(model)).status_code


def test_sighup_reloads_and_sigterm_drains(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    port = free_port()
    log = tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    with running(["serve", "--config", str(path), "--port", str(port)], log) as proc:
        wait_ready(f"{base}/readyz", proc, log)
        with httpx.Client(base_url=base, trust_env=False, timeout=10.0) as http:
            path.write_text("routes: [unclosed")
            os.kill(proc.pid, signal.SIGHUP)
            until(lambda: "config reload refused" in log.read_text(), "the refusal logged")
            assert proc.poll() is None and _served(http, "default") == 200
            second = {"name": "second", "model": "m", "backends": ["e1"]}
            path.write_text(yaml.safe_dump({**CONFIG, "routes": [*CONFIG["routes"], second]}))
            os.kill(proc.pid, signal.SIGHUP)
            until(lambda: _served(http, "second") == 200, "the new route served")
            assert log.read_text().count("config reload refused") == 1
            with http.stream("POST", "/v1/chat/completions", json=_chat("default", True)) as stream:
                chunks = stream.iter_raw()
                text = next(chunks).decode()
                proc.send_signal(signal.SIGTERM)
                until(lambda: http.get("/readyz").status_code == 503, "/readyz 503", 5.0)
                text += b"".join(chunks).decode()
        proc.wait(timeout=20)
    assert 'data: {"error":' in text and "gateway_shutting_down" in text
    assert "[DONE]" not in text
    output = log.read_text()
    assert "drain deadline passed: ended 1 streams" in output


def test_sighup_to_the_parent_reloads_every_worker(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    port = free_port()
    log = tmp_path / "serve.log"
    command = ["serve", "--config", str(path), "--port", str(port), "--workers", "2"]
    with running(command, log) as proc:
        wait_ready(f"http://127.0.0.1:{port}/readyz", proc, log, timeout_s=30)
        # Each worker starts its own emulated engine as it starts up.
        until(lambda: log.read_text().count("engine e1 listening") == 2, "both workers up")
        second = {"name": "second", "model": "m", "backends": ["e1"]}
        path.write_text(yaml.safe_dump({**CONFIG, "routes": [*CONFIG["routes"], second]}))
        proc.send_signal(signal.SIGHUP)
        until(
            lambda: log.read_text().count("config reloaded (generation 2)") == 2,
            "both workers reloaded",
        )
        assert "Child process" not in log.read_text()  # none was restarted

"""`serve --workers 2`: every scrape of /metrics counts the requests of both workers."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import yaml

from tests.conftest import until
from tests.gateway.processes import free_port, running, wait_ready
from tests.gateway.telemetry.test_metrics_endpoint import samples, total

CONFIG = {
    "backends": [
        {"name": "e1", "kind": "emulated", "models": ["m"], "emulator": {"token_delay_ms": 5}},
    ],
    "routes": [{"name": "default", "model": "m", "backends": ["e1"]}],
    "profiles": [{"name": "balanced", "plugins": [{"ref": "least-load-scorer"}]}],
    "health": {"active_probes": False},
    "quality": {"enabled": False},
}


def test_metrics_add_up_across_workers(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    database = tmp_path / "records.db"
    # Both workers write their records to one SQLite file, migrated once by the parent.
    config.write_text(yaml.safe_dump({**CONFIG, "store": {"url": f"sqlite:///{database}"}}))
    port = free_port()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom")}
    (tmp_path / "prom").mkdir()
    command = ["serve", "--config", str(config), "--port", str(port), "--workers", "2"]
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with running([*command, "--log-level", "warning"], log, env) as proc:
        wait_ready(f"{base}/readyz", proc, log, timeout_s=30)
        # Concurrent requests, each on a new connection that stays busy for a while, so
        # an idle worker gets to accept some (one at a time, one worker may take them all).
        pids: set[int] = set()
        sent = 0
        with ThreadPoolExecutor(8) as pool:
            for _ in range(20):
                pids.update(pool.map(lambda _: _one_request(base), range(8)))
                sent += 8
                if len(pids) == 2:
                    break
        # Each worker's telemetry thread counts its requests a moment after answering them.
        until(lambda: _requests_counted(base) == sent, f"{sent} requests counted")
        counts = [_requests_counted(base) for _ in range(6)]
        assert len(pids) == 2  # both workers answered...
        assert counts == [float(sent)] * 6, (counts, pids)  # ...and every scrape saw them all
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT count(*), count(DISTINCT backend) FROM requests").fetchone()
    assert rows == (sent, 1)  # every record of both workers, written before they stopped


def _one_request(base: str) -> int:
    """One chat request on a fresh connection; the pid of the worker that served it."""
    body = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 20}
    with httpx.Client(base_url=base, timeout=10) as client:
        assert client.post("/v1/chat/completions", json=body).status_code == 200
        return int(client.get("/v1/switchyard/dashboard").json()["worker"]["pid"])


def _requests_counted(base: str) -> float:
    """switchyard_requests_total of one scrape of /metrics (on a fresh connection, so either
    worker may answer it)."""
    with httpx.Client(base_url=base, timeout=10) as client:
        text = client.get("/metrics").text
    return total(samples(text), "switchyard_requests_total", route="default")

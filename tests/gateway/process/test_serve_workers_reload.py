"""`switchyard serve --workers 2` as a real process: the admin reload, answered by one
worker, reaches both (a bad file reaches none); a virtual key may use a route the reload
added; a removed backend's gauges leave /metrics."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.conftest import until
from tests.gateway.processes import free_port, running, wait_ready

SECRET_ENV = "SY_WR_KEY_SECRET"
ADMIN_ENV = "SY_WR_ADMIN_KEYS"
ADMIN = {"authorization": "Bearer admin-key-1"}
ENV = {SECRET_ENV: "s" * 40, ADMIN_ENV: "admin-key-1"}


def _emulated(name: str) -> dict[str, Any]:
    return {"name": name, "kind": "emulated", "models": ["m"], "emulator": {"token_delay_ms": 1}}


def _config(database: Path, backends: list[str], routes: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "server": {"admin_keys_env": ADMIN_ENV},
        "backends": [_emulated(name) for name in backends],
        "routes": [{"name": n, "model": "m", "backends": b} for n, b in routes.items()],
        "profiles": [{"name": "balanced", "plugins": [{"ref": "least-load-scorer"}]}],
        "health": {"active_probes": False},
        "quality": {"enabled": False},
        "store": {"url": f"sqlite:///{database}"},
        "keys": {"enabled": True, "secret_env": SECRET_ENV, "refresh_s": 0.2},
    }


def _chat(route: str) -> dict[str, Any]:
    return {"model": route, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def _served_by(base: str, key: str, route: str) -> tuple[int, int]:
    """(status, worker pid) of one chat request on a fresh connection."""
    with httpx.Client(base_url=base, timeout=10, trust_env=False) as client:
        status = client.post(
            "/v1/chat/completions", json=_chat(route), headers={"authorization": f"Bearer {key}"}
        ).status_code
        pid = int(client.get("/v1/switchyard/dashboard", headers=ADMIN).json()["worker"]["pid"])
    return status, pid


def _every_worker(ask: Callable[[], tuple[int, int]]) -> dict[int, set[int]]:
    """Statuses by worker pid, asked concurrently on fresh connections until both workers
    answered (one connection at a time, one worker may accept them all)."""
    seen: dict[int, set[int]] = {}
    with ThreadPoolExecutor(8) as pool:
        for _ in range(30):
            for status, pid in pool.map(lambda _: ask(), range(8)):
                seen.setdefault(pid, set()).add(status)
            if len(seen) == 2:
                break
    return seen


def _both_serve(base: str, key: str, route: str) -> bool:
    """Whether both workers answered 200 to `key` on `route`, every time."""
    statuses = _every_worker(lambda: _served_by(base, key, route))
    return len(statuses) == 2 and all(s == {200} for s in statuses.values())


def _scrape(base: str) -> str:
    with httpx.Client(base_url=base, timeout=10, trust_env=False) as client:
        return client.get("/metrics").text


def _gauged(text: str, backend: str) -> list[str]:
    families = ("switchyard_backend_healthy", "switchyard_in_flight_requests")
    label = f'backend="{backend}"'
    return [line for line in text.splitlines() if line.startswith(families) and label in line]


def test_an_admin_reload_reaches_every_worker(tmp_path: Path) -> None:
    path, database = tmp_path / "config.yaml", tmp_path / "records.db"
    first = _config(database, ["e1", "e2"], {"default": ["e1", "e2"]})
    path.write_text(yaml.safe_dump(first))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    # The workers' run directory under tmp_path: the test sees when both have registered.
    env = {**ENV, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom"), "TMPDIR": str(tmp_path)}
    pid_path = tmp_path / "switchyard.pid"
    command = ["serve", "--config", str(path), "--port", str(port), "--workers", "2"]
    command += ["--pid-file", str(pid_path)]
    with running(command, log, env) as proc, httpx.Client(base_url=base, timeout=60) as http:
        wait_ready(f"{base}/readyz", proc, log, timeout_s=30)
        until(lambda: log.read_text().count("engine e2 listening") == 2, "both workers up")
        # A worker counts in reloads once it handles SIGHUP, a moment after its engines.
        registered = lambda: len(list(tmp_path.glob("switchyard-run-*/worker-*.json")))  # noqa: E731
        until(lambda: registered() == 2, "both workers registered for reloads")
        assert pid_path.read_text().strip() == str(proc.pid)  # the parent, which takes SIGHUP
        made = http.post("/v1/switchyard/admin/keys", json={"name": "all"}, headers=ADMIN)
        every_route = made.json()["key"]
        until(lambda: _gauged(_scrape(base), "e2"), "e2's gauges exported")

        broken = _config(database, ["e1"], {"default": ["e1"], "second": ["nope"]})
        path.write_text(yaml.safe_dump(broken))
        refused = http.post("/v1/switchyard/admin/reload", headers=ADMIN)
        assert refused.status_code == 400, refused.text
        assert any("nope" in p for p in refused.json()["error"]["problems"])
        # Validated once, by the worker that answered; no worker was asked to swap.
        assert log.read_text().count("config reload refused") == 1
        assert "config reloaded" not in log.read_text()

        path.write_text(
            yaml.safe_dump(_config(database, ["e1"], {"default": ["e1"], "second": ["e1"]}))
        )
        answer = http.post("/v1/switchyard/admin/reload", headers=ADMIN)
        assert answer.status_code == 200, answer.text
        summary = answer.json()
        assert summary["workers"] == {"took": 2, "refused": []}
        assert summary["routes"]["added"] == ["second"]
        assert summary["backends"]["removed"] == ["e2"]
        assert log.read_text().count("config reloaded (generation 2)") == 2

        # Both workers serve the added route to a key allowed every route...
        assert _both_serve(base, every_route, "second")
        # ...and to a key made for it after the reload, once each worker's cache has it.
        made = http.post(
            "/v1/switchyard/admin/keys",
            json={"name": "second", "routes": ["second"]},
            headers=ADMIN,
        )
        assert made.status_code == 201, made.text
        only_second = made.json()["key"]
        until(lambda: _both_serve(base, only_second, "second"), "the new key on both workers")
        # Every scrape, whichever worker answers it, lacks the removed backend's gauges.
        for _ in range(6):
            assert _gauged(_scrape(base), "e2") == []
    assert not pid_path.exists()

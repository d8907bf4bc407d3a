"""A reload of every worker, coordinated through the run directory: the answering worker
validates once, asks, and answers with each worker's report, a refusal with its reason, a
silent worker as refused after the wait, a file changed under it as refused."""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from gateway.config.root import Config, parse_yaml
from gateway.errors import InvalidConfig, NotReloading, ReloadFailed, ReloadIncomplete
from gateway.process.reload_plan import compare
from gateway.process.runtime import ReloadResult, read_config
from gateway.process.worker_reloads import WorkerReloads

CONFIG: dict[str, Any] = {
    "backends": [{"name": "b1", "base_url": "http://127.0.0.1:9", "models": ["m"]}],
    "routes": [{"name": "default", "model": "m", "backends": ["b1"]}],
    "profiles": [{"name": "balanced", "plugins": [{"ref": "least-load-scorer"}]}],
}
SIBLING = os.getppid()
"""A live process standing for a second worker: its reports are written by the test."""


class FakeRuntime:
    """What the coordination asks of a worker's runtime: check, then reload."""

    def __init__(self) -> None:
        self.reloaded: list[Config] = []
        self.checked = 0

    def check(self, config: Config) -> None:
        self.checked += 1

    async def reload(self, load: Any) -> ReloadResult:
        config = await read_config(load)
        self.reloaded.append(config)
        return ReloadResult(2, compare(config, config))


class Workers:
    """This process as the answering worker, and a sibling whose report the test writes."""

    def __init__(self, tmp_path: Path, sibling_says: dict[str, object] | None) -> None:
        self.run_dir = tmp_path / "run"
        self.run_dir.mkdir()
        self.path = tmp_path / "config.yaml"
        self.path.write_text(yaml.safe_dump(CONFIG))
        self.runtime = FakeRuntime()
        self.asked = 0
        self.sibling_says = sibling_says
        self.before_reload = lambda: None
        self.tasks: set[asyncio.Task[None]] = set()
        self.reloads = WorkerReloads(
            self.run_dir, self.path, parse_yaml, parent_pid=0, wait_s=0.5, ask=self.ask
        )

    def register_sibling(self, pid: int = SIBLING) -> None:
        report = {"pid": pid, "request": None}
        (self.run_dir / f"worker-{pid}.json").write_bytes(orjson.dumps(report))

    def ask(self) -> None:
        """What the parent's SIGHUP does: every worker reloads and reports."""
        self.asked += 1
        self.before_reload()
        self.tasks.add(asyncio.create_task(self.reloads.on_hup(self.runtime)))  # type: ignore[arg-type]
        if self.sibling_says is not None:
            request = orjson.loads((self.run_dir / "request.json").read_bytes())["request"]
            report = {"pid": SIBLING, "request": request, **self.sibling_says}
            (self.run_dir / f"worker-{SIBLING}.json").write_bytes(orjson.dumps(report))

    async def reload_all(self) -> dict[str, object]:
        with self.reloads.registered():
            return await self.reloads.reload_all(self.runtime)  # type: ignore[arg-type]


async def test_every_worker_took_it(tmp_path: Path) -> None:
    workers = Workers(tmp_path, {"took": True, "summary": {"generation": 2}})
    workers.register_sibling()
    answer = await workers.reload_all()
    assert answer["workers"] == {"took": 2, "refused": []}
    assert answer["object"] == "switchyard.reload" and answer["generation"] == 2
    assert workers.runtime.checked == 1 and len(workers.runtime.reloaded) == 1
    assert not (workers.run_dir / "request.json").exists()  # closed with the answer


async def test_a_refusal_names_the_worker_and_its_reason(tmp_path: Path) -> None:
    refusal = {"code": "reload_failed", "error": "the new config could not be started: x"}
    workers = Workers(tmp_path, {"took": False, **refusal})
    workers.register_sibling()
    with pytest.raises(ReloadIncomplete) as raised:
        await workers.reload_all()
    assert raised.value.workers == {"took": 1, "refused": [{"pid": SIBLING, **refusal}]}
    assert raised.value.status == 500 and "1 of 2 workers" in raised.value.message


@pytest.fixture
def dead_pid() -> int:
    """The pid of a process that has exited."""
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    return dead.pid


async def test_a_silent_worker_is_refused_after_the_wait_and_a_dead_one_not_waited_for(
    tmp_path: Path, dead_pid: int
) -> None:
    workers = Workers(tmp_path, None)
    workers.register_sibling()
    workers.register_sibling(dead_pid)
    with pytest.raises(ReloadIncomplete) as raised:
        await workers.reload_all()
    silent = {"pid": SIBLING, "code": "no_report", "error": "no report within 0.5 s"}
    assert raised.value.workers == {"took": 1, "refused": [silent]}
    assert not (workers.run_dir / f"worker-{dead_pid}.json").exists()


async def test_a_file_that_does_not_validate_asks_no_worker(tmp_path: Path) -> None:
    workers = Workers(tmp_path, {"took": True})
    workers.path.write_text("routes: [unclosed")
    with pytest.raises(InvalidConfig):
        await workers.reload_all()
    assert workers.asked == 0 and workers.runtime.reloaded == []
    assert not (workers.run_dir / "request.json").exists()


async def test_a_file_changed_after_it_was_validated_is_refused(tmp_path: Path) -> None:
    workers = Workers(tmp_path, None)
    changed = {**CONFIG, "routes": [*CONFIG["routes"], {**CONFIG["routes"][0], "name": "two"}]}
    workers.before_reload = lambda: workers.path.write_text(yaml.safe_dump(changed))
    with pytest.raises(ReloadFailed) as raised:
        await workers.reload_all()
    assert not isinstance(raised.value, ReloadIncomplete)
    assert workers.runtime.reloaded == []
    workers_said = raised.value.workers
    assert workers_said is not None and workers_said["took"] == 0
    (refused,) = workers_said["refused"]  # type: ignore[misc]
    assert refused["pid"] == os.getpid() and refused["code"] == "invalid_config"
    assert "changed after the reload was validated" in refused["error"]


async def test_one_reload_of_all_workers_at_a_time(tmp_path: Path) -> None:
    workers = Workers(tmp_path, {"took": True})
    with (workers.run_dir / "reload.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(NotReloading, match="under way"):
            await workers.reload_all()
    assert workers.asked == 0


async def test_a_sighup_without_a_request_reloads_and_reports_nothing(tmp_path: Path) -> None:
    workers = Workers(tmp_path, None)
    with workers.reloads.registered():
        await workers.reloads.on_hup(workers.runtime)  # type: ignore[arg-type]
        report = orjson.loads((workers.run_dir / f"worker-{os.getpid()}.json").read_bytes())
    assert len(workers.runtime.reloaded) == 1
    assert report["request"] is None
    assert not (workers.run_dir / f"worker-{os.getpid()}.json").exists()

"""Launching replicas without a model: the command line, a replica that cannot start (it
reports its log), and one that never answers (every replica started is stopped).
tests/real_engine starts real ones."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import gateway.engines.launcher as launcher
from gateway.engines.errors import ReplicaStartError
from gateway.engines.launcher import ReplicaOptions, replica_command, start_replicas
from gateway.engines.processes import REPLICA_MODULE, is_running


def test_the_replica_command_line() -> None:
    options = ReplicaOptions(
        model_path=Path("/models/SmolLM2-135M-Instruct.Q4_1.gguf"),
        ctx_size=1024,
        cache_ram_mib=32,
        cache_type_k="q4_0",
    )
    command = replica_command(options, 41000, exit_with_parent=True)

    assert command[:3] == [sys.executable, "-m", REPLICA_MODULE]
    assert command[-1] == "--exit-with-parent"
    flags = dict(zip(command[3:-1:2], command[4:-1:2], strict=True))
    assert flags == {
        "--model": "/models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "--port": "41000",
        "--threads": "1",
        "--parallel": "1",
        "--ctx-size": "1024",
        "--cache-ram-mib": "32",
        "--alias": "smollm2-135m-instruct.q4_1",
        "--cache-type-k": "q4_0",
    }


def test_the_alias_defaults_to_the_files_stem() -> None:
    assert ReplicaOptions(model_path=Path("a/My-Model.Q8_0.gguf")).model_alias == "my-model.q8_0"
    assert ReplicaOptions(model_path=Path("a/b.gguf"), alias="local").model_alias == "local"


def test_a_replica_that_cannot_start_names_its_log(tmp_path: Path) -> None:
    not_a_model = tmp_path / "broken.gguf"
    not_a_model.write_text("not a GGUF file")
    options = ReplicaOptions(model_path=not_a_model, ctx_size=256, cache_ram_mib=0)

    with pytest.raises(ReplicaStartError) as caught:
        start_replicas(1, options, log_dir=tmp_path / "logs", exit_with_parent=True)

    message = str(caught.value)
    assert "llama-1 exited with code" in message
    assert str(tmp_path / "logs" / "llama-1.log") in message


def test_every_started_replica_is_stopped_when_one_never_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    real_spawn = launcher.spawn

    def spawn(*args: object, **kwargs: object) -> launcher.LaunchedReplica:
        launched = real_spawn(*args, **kwargs)  # type: ignore[arg-type]
        started.append(launched.replica.pid)
        return launched

    def silent(*_: object, **__: object) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(120)"]

    monkeypatch.setattr(launcher, "spawn", spawn)
    monkeypatch.setattr(launcher, "replica_command", silent)
    options = ReplicaOptions(model_path=tmp_path / "unused.gguf")

    with pytest.raises(ReplicaStartError, match="did not answer"):
        start_replicas(3, options, log_dir=tmp_path, ready_timeout_s=0.5)

    assert len(started) == 3
    assert not any(is_running(pid) for pid in started)

"""`switchyard engines ...` without starting an engine: flags, refusals, stop and status
on state files (the replicas here are stand-in processes). tests/real_engine runs it for
real."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.engines.commands import _print_started
from gateway.engines.launcher import ReplicaOptions
from gateway.engines.processes import REPLICA_MODULE, is_running
from gateway.engines.state import EngineState, Replica, read_state, write_state

SLEEP = "import time; time.sleep(120)"


@pytest.fixture
def stand_in() -> Iterator[subprocess.Popen[bytes]]:
    """A process whose command line looks like a replica's on port 41234."""
    process = subprocess.Popen([sys.executable, "-c", SLEEP, REPLICA_MODULE, "--port", "41234"])
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def state_of(tmp_path: Path, *pids_and_ports: tuple[int, int]) -> EngineState:
    replicas = tuple(
        Replica(name=f"llama-{i}", port=port, pid=pid, n_ctx=2048, log_path=tmp_path / "x.log")
        for i, (pid, port) in enumerate(pids_and_ports, start=1)
    )
    return EngineState(
        model_path=tmp_path / "m.gguf", model_alias="m", started_at="now", replicas=replicas
    )


def test_stop_and_status_with_nothing_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["engines", "stop", "--state-dir", str(tmp_path)]) == 0
    assert "no engines to stop" in capsys.readouterr().out
    assert main(["engines", "status", "--state-dir", str(tmp_path)]) == 1


def test_stop_signals_only_its_replicas_and_forgets_them(
    tmp_path: Path, stand_in: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    stranger = subprocess.Popen([sys.executable, "-c", SLEEP])
    try:
        # The second entry's PID now belongs to a process that is no replica.
        write_state(tmp_path, state_of(tmp_path, (stand_in.pid, 41234), (stranger.pid, 41235)))
        assert main(["engines", "status", "--state-dir", str(tmp_path)]) == 1

        assert main(["engines", "stop", "--state-dir", str(tmp_path)]) == 0

        out = capsys.readouterr().out
        assert f"stopped llama-1 (pid {stand_in.pid})" in out
        assert f"llama-2 (pid {stranger.pid}) was not running" in out
        assert stand_in.wait(timeout=10) is not None
        assert is_running(stranger.pid)
        assert read_state(tmp_path) is None
    finally:
        stranger.kill()
        stranger.wait()


def test_start_refuses_while_replicas_run(
    tmp_path: Path, stand_in: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    write_state(tmp_path, state_of(tmp_path, (stand_in.pid, 41234)))
    code = main(["engines", "start", "--state-dir", str(tmp_path), "--no-install"])
    assert code == 2
    assert "engines stop` first" in capsys.readouterr().err
    assert stand_in.poll() is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--replicas", "0"], "--replicas: at least 1"),
        (["--ctx-size", "16"], "ctx_size"),
        (["--parallel", "0"], "parallel"),
    ],
)
def test_bad_flags_fail_before_anything_starts(
    tmp_path: Path, flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["engines", "start", "--state-dir", str(tmp_path), "--no-install", *flags]
    assert main([*args, "--model", str(tmp_path / "absent.gguf")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize(
    ("replicas", "parallel", "head"),
    [
        (1, 1, "started 1 llama.cpp replica of m (2,048 tokens per sequence, 1 slot each):"),
        (2, 4, "started 2 llama.cpp replicas of m (2,048 tokens per sequence, 4 slots each):"),
    ],
)
def test_start_says_what_it_started_in_words_that_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], replicas: int, parallel: int, head: str
) -> None:
    state = state_of(tmp_path, *((100 + i, 41000 + i) for i in range(replicas)))
    _print_started(state, ReplicaOptions(model_path=tmp_path / "m.gguf", parallel=parallel))
    assert capsys.readouterr().out.splitlines()[0] == head

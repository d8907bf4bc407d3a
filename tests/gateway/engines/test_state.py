"""The state file: written atomically, read back the same, and refused when foreign."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.engines.errors import EngineError
from gateway.engines.state import (
    EngineState,
    Replica,
    read_state,
    remove_state,
    state_path,
    write_state,
)


def sample_state(tmp_path: Path) -> EngineState:
    replicas = tuple(
        Replica(name=f"llama-{i}", port=40000 + i, pid=1000 + i, n_ctx=2048, log_path=tmp_path)
        for i in (1, 2)
    )
    return EngineState(
        model_path=tmp_path / "model.gguf",
        model_alias="smol",
        started_at="2026-01-02T03:04:05+00:00",
        replicas=replicas,
        config_path=tmp_path / "switchyard-engines.yaml",
    )


def test_round_trip(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state = sample_state(tmp_path)

    path = write_state(state_dir, state)

    assert path == state_path(state_dir)
    assert read_state(state_dir) == state
    assert [p.name for p in state_dir.iterdir()] == ["engines.json"]


def test_the_urls_of_a_replica() -> None:
    replica = Replica(name="a", port=41234, pid=1, n_ctx=512, log_path=Path("a.log"))
    assert replica.origin == "http://127.0.0.1:41234"
    assert replica.base_url == "http://127.0.0.1:41234/v1"


def test_no_file_is_no_state_and_removing_twice_is_fine(tmp_path: Path) -> None:
    assert read_state(tmp_path) is None
    write_state(tmp_path, sample_state(tmp_path))
    remove_state(tmp_path)
    remove_state(tmp_path)
    assert read_state(tmp_path) is None


def test_a_foreign_file_is_an_error_that_names_it(tmp_path: Path) -> None:
    state_path(tmp_path).write_text('{"pids": [1, 2]}')
    with pytest.raises(EngineError, match=r"engines\.json"):
        read_state(tmp_path)

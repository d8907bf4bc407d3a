"""Several workers' metric files: a killed worker's live gauges stop counting; every run
starts from an empty directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.process.workers import prepare_metrics_dir
from gateway.telemetry.metrics import MULTIPROC_ENV, GatewayMetrics

# A worker that sets its gauges, counts a request and dies without any clean-up.
_WORKER = """
from gateway.telemetry.metrics import GatewayMetrics
m = GatewayMetrics()
m.sample_backends([("a", False, 7)])
m.requests.labels("default", "a", "2xx", "chat.completions").inc()
"""


def _values(text: str) -> dict[str, float]:
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.labels.get("backend") == "a"
    }


def test_a_dead_workers_gauges_are_forgotten_and_its_counts_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MULTIPROC_ENV, str(tmp_path))
    subprocess.run([sys.executable, "-c", _WORKER], check=True, env=dict(os.environ))
    text = GatewayMetrics().render()[0].decode()
    values = _values(text)
    assert values.get("switchyard_requests_total") == 1.0  # counts outlive the worker
    assert "switchyard_in_flight_requests" not in values  # its live gauges do not
    assert "switchyard_backend_healthy" not in values


def test_metrics_dir_is_emptied_created_or_made_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = tmp_path / "given" / "deeper"
    monkeypatch.setenv(MULTIPROC_ENV, str(given))
    prepare_metrics_dir(1)()
    assert given.is_dir()
    (given / "counter_123.db").write_bytes(b"old")
    prepare_metrics_dir(4)()
    assert not list(given.iterdir())  # an earlier run's values would be added to this one's

    monkeypatch.delenv(MULTIPROC_ENV)
    assert prepare_metrics_dir(1) is not None and MULTIPROC_ENV not in os.environ
    cleanup = prepare_metrics_dir(2)
    made = Path(os.environ[MULTIPROC_ENV])
    assert made.is_dir()
    cleanup()
    assert not made.exists()
    monkeypatch.delenv(MULTIPROC_ENV)

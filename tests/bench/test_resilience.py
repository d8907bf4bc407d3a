"""The load and soak scenarios, short: each runs end to end on loopback and must behave
(no failures, streams cut only with an error event, every record stored); timings are
not asserted. The full runs and their figures: docs/reliability.md#load-and-soak."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bench.procs import StartError
from bench.resilience import hold, kill_backend, slow_clients, soak, store_outage
from bench.resilience.stores import pg_bin


def _need(binary: str) -> None:
    try:
        found = pg_bin(binary) if binary == "initdb" else shutil.which(binary)
    except StartError:
        found = None
    if found is None:
        message = f"{binary} is not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.mark.timeout(180)
def test_streaming_clients_are_all_held_at_once(tmp_path: Path) -> None:
    params = hold.HoldParams(clients=50, hold_s=8.0, ramp_s=1.0, token_delay_ms=500.0)
    result = hold.run(params, tmp_path)
    assert (result["requests"], result["failed"]) == (50, 0), result["error_examples"]
    assert result["held_at_once_max"] == 50
    assert result["gateway_fds_peak"] >= 50  # one socket per held client, at least
    assert result["gateway_rss_peak_mb"] > 0


@pytest.mark.timeout(180)
def test_a_short_soak_answers_every_request_and_samples_memory(tmp_path: Path) -> None:
    params = soak.SoakParams(minutes=10 / 60, rate_per_s=20.0, warmup_s=2.0, sample_every_s=1.0)
    result = soak.run(params, tmp_path)
    assert result["requests"] >= 190 and result["failed"] == 0, result["error_examples"]
    assert result["rss_growth_pct"] is not None  # measured; a 10 s soak proves no bound


@pytest.mark.timeout(180)
def test_requests_not_yet_streaming_survive_a_killed_backend(tmp_path: Path) -> None:
    params = kill_backend.KillParams(rate_per_s=20.0, duration_s=8.0, kill_at_s=3.0)
    result = kill_backend.run(params, tmp_path)
    classes = result["classes"]
    waiting = classes["not_yet_streaming"]
    assert waiting["requests"] > 50 and waiting["failed"] == 0, waiting["error_examples"]
    cut = result["streams_cut_on_killed_engine"]
    assert cut["silent_cut"] == 0  # an explicit error event, never a silent truncation
    assert cut["error_event"] == classes["streaming_on_killed_engine"]["failed"]
    assert classes["streaming_on_other_engines"]["failed"] == 0


@pytest.mark.timeout(180)
def test_slow_clients_are_ended_with_408_while_a_normal_client_is_served(tmp_path: Path) -> None:
    params = slow_clients.SlowParams(
        slow_clients=30, dribble_every_s=0.5, header_timeout_s=3.0, requests=20
    )
    result = slow_clients.run(params, tmp_path)
    assert result["all"]["failed"] == 0, result["all"]["error_examples"]
    assert result["slow_answered_408"] == 30
    assert result["latency_ratio_flooded_to_alone"] > 0  # measured, not bounded here


@pytest.mark.timeout(300)
def test_serving_goes_on_through_store_outages_and_no_record_is_lost(tmp_path: Path) -> None:
    _need("redis-server")
    _need("initdb")
    params = store_outage.OutageParams(phase_s=6.0, rate_per_s=10.0, catch_up_s=60.0)
    result = store_outage.run(params, tmp_path)
    phases = {p["phase"]: p for p in result["phases"]}
    assert all(p["answered"]["failed"] == 0 for p in phases.values()), phases
    assert phases["both up"]["readyz"]["degraded"] == []
    assert phases["redis down"]["readyz"]["degraded"] == ["redis:state-sync", "redis:limits"]
    assert phases["redis and postgres down"]["readyz"]["degraded"][0] == "store"
    # Limits go back to Redis at their first request after `limits.retry_redis_s` (5 s).
    assert phases["postgres down"]["readyz"]["degraded"][:1] == ["store"]
    assert "redis:state-sync" not in phases["postgres down"]["readyz"]["degraded"]
    assert result["after"]["readyz"]["degraded"] == []
    assert "switchyard_store_up 0.0" in phases["postgres down"]["metrics"]
    assert 'switchyard_redis_up{use="limits"} 0.0' in phases["redis down"]["metrics"]
    assert all(p["readyz_status"] == 200 for p in phases.values())
    assert result["records_missing"] == 0
    assert result["records_in_db"] >= result["requests_sent"]

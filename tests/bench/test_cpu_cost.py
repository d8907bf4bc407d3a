"""`switchyard bench cpu`, short: every variant serves its phases without an error and the
report carries each part's cost; the figures themselves are not asserted (docs/benchmarks.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cpu import cli as cpu_cost


def test_config_variants_change_only_their_part() -> None:
    ports = {"engine": 1, "engine-paced": 2}
    defaults = cpu_cost.gateway_config(ports, 9, cpu_cost.VARIANTS["defaults"])
    assert {r["profile"] for r in defaults["routes"]} == {"cache-aware"}
    assert "quality" not in defaults and "telemetry" not in defaults
    off = cpu_cost.gateway_config(ports, 9, cpu_cost.VARIANTS["all-off"])
    assert off["quality"] == {"enabled": False}
    assert off["telemetry"]["access_log"] == "off"
    assert {r["profile"] for r in off["routes"]} == {"simple"}
    client = cpu_cost.gateway_config(ports, 9, cpu_cost.VARIANTS["aiohttp-client"])
    assert {b["http_client"] for b in client["backends"]} == {"aiohttp"}
    assert all("http_client" not in b for b in defaults["backends"])
    gc = cpu_cost.gateway_config(ports, 9, cpu_cost.VARIANTS["gc-cpython"])
    assert gc["server"] == {"host": "127.0.0.1", "port": 9, "gc_gen0_threshold": 0,
                            "gc_freeze": False}  # fmt: skip
    traced = cpu_cost.gateway_config(ports, 9, cpu_cost.VARIANTS["tracing-0.01"], "http://r/t")
    assert traced["tracing"]["sample_ratio"] == 0.01
    assert traced["tracing"]["endpoint"] == "http://r/t"
    assert "tracing" not in defaults


@pytest.mark.timeout(240)
def test_short_run_reports_every_phase_and_part(tmp_path: Path) -> None:
    out = tmp_path / "cpu.json"
    argv = ["--quick", "--rounds", "1", "--scale", "0.5", "--concurrency", "1", "4"]
    argv += ["--variants", "defaults", "all-off", "tcp-pipe", "tracing-1.0", "tracing-0.01"]
    argv += ["--json", str(out)]
    assert cpu_cost.main(argv) == 0
    summary = json.loads(out.read_text())
    rows = summary["rows"]
    phases = {row["phase"] for row in rows}
    expected = {"non-stream c=1", "non-stream c=4", "stream c=1", "stream c=4", "stream-burst c=1"}
    assert phases == expected
    variants = {"defaults", "all-off", "tcp-pipe", "tracing-1.0", "tracing-0.01"}
    assert {row["variant"] for row in rows} == variants
    assert all(row["requests"] > 0 and row["errors"] == 0 for row in rows)
    assert all("cpu_us_per_chunk" in row for row in rows if row["phase"].startswith("stream"))
    names = [name for name, _ in summary["parts_us"]]
    assert "decide: cache-aware profile" in names and "quality: signals" in names
    assert "relay one SSE chunk, spliced (caches swept first)" in names
    assert all(us > 0 for _, us in summary["parts_us"])
    idle = {row["variant"]: row for row in summary["idle"]}
    assert set(idle) == variants
    assert all(row["cpu_ms_per_s"] >= 0 and row["wakes_per_s"] >= 0 for row in idle.values())
    assert idle["defaults"]["wakes_per_s"] > 0  # its once-a-second beat at least
    # Every span of the fully sampled variant reached the receiver (warm-ups add a few);
    # at 0.01 no more than a few did.
    exported = {row["variant"]: row for row in summary["tracing"]["variants"]}
    full, sampled = exported["tracing-1.0"], exported["tracing-0.01"]
    assert full["spans_received"] >= full["spans_if_all_sampled"] > 0
    assert sampled["spans_received"] < full["spans_received"] / 10


@pytest.mark.timeout(240)
@pytest.mark.parametrize("ingress", ["messages", "responses"])
def test_a_translating_ingress_is_measured_without_the_floors(tmp_path: Path, ingress: str) -> None:
    out = tmp_path / "cpu.json"
    argv = ["--quick", "--rounds", "1", "--scale", "0.3", "--concurrency", "2"]
    argv += ["--variants", "defaults", "tcp-pipe", "--ingress", ingress, "--json", str(out)]
    assert cpu_cost.main(argv) == 0
    summary = json.loads(out.read_text())
    assert summary["ingress"] == ingress
    rows = summary["rows"]
    assert {row["variant"] for row in rows} == {"defaults"}  # a floor cannot translate
    assert all(row["requests"] > 0 and row["errors"] == 0 for row in rows)
    streams = [row for row in rows if row["phase"].startswith("stream")]
    assert streams and all(row["chunks_per_request"] > 3 for row in streams)

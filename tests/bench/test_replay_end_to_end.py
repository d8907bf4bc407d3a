"""A ten-request trace through a real gateway and emulated engines, in-process and via the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from bench.replay.cli import main
from bench.replay.fleet import EngineOptions
from bench.replay.metrics import Slo
from bench.replay.oracle import oracle_hit_ratio
from bench.replay.profiles import PROFILES, FleetRoute, profile_config
from bench.replay.report import MEASURE_KEYS, complete_row, render
from bench.replay.runner import UPSTREAM_MODEL, ReplaySettings, Router, measure, summarise
from bench.replay.trace import load_trace
from emulator.settings import EmulatorSettings
from tests.bench.synthetic import agent_trace
from tests.conftest import StartEmulator, StartGateway

TIME_SCALE = 0.05
BATCHED = "cost_model" in EmulatorSettings.model_fields


def _engine_settings() -> dict[str, Any]:
    if not BATCHED:
        return {"token_delay_ms": 1.0, "time_scale": TIME_SCALE}
    return {
        "cost_model": "batched",
        "kv_capacity_tokens": 50_000,
        "prefill_tokens_per_s": 50_000,
        "decode_base_ms": 5,
        "time_scale": TIME_SCALE,
    }


async def test_replay_through_gateway_reports_every_measure(
    tmp_path: Path, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    trace = load_trace(agent_trace(tmp_path / "t.jsonl"))
    engines = [await start_emulator(**_engine_settings()) for _ in range(2)]
    urls = [f"http://127.0.0.1:{e.port}" for e in engines]
    names = {url: f"engine-{i}" for i, url in enumerate(urls)}
    fleet = FleetRoute("default", UPSTREAM_MODEL, {n: u for u, n in names.items()}, 100)
    gateway = await start_gateway(profile_config(PROFILES["round-robin"], fleet, port=0))
    settings = ReplaySettings(
        trace=trace,
        requests=trace.requests,
        route="default",
        engines=EngineOptions(count=2, time_scale=TIME_SCALE),
        slo=Slo(ttft_ms=60_000, tpot_ms=60_000),
        send_session=True,
        request_timeout_s=30,
        progress=False,
        workdir=tmp_path,
    )
    router = Router(gateway.url, None, names, is_gateway=True)

    measured = await measure(router, urls, settings, "round-robin")
    row = summarise("round-robin", measured, router, settings, "batched", [])
    full = complete_row(row, oracle_hit_ratio(trace).hit_ratio, {"time_scale": TIME_SCALE})

    assert set(MEASURE_KEYS) <= set(full)
    assert full["error"] is None and full["errors"] == 0 and full["requests"] == 10
    assert full["goodput_ratio"] == 1.0
    assert full["ttft_ms_p50"] is not None and full["e2e_ms_p99"] >= full["ttft_ms_p50"]
    assert full["imbalance_requests"] == 1.0  # round robin over two engines, ten requests
    assert full["decision_us_p50"] is not None
    assert sum(b["requests"] for b in full["backends"].values()) == 10
    assert 0 < full["oracle_hit_ratio"] < 1
    if BATCHED:
        assert full["token_cache_hit_ratio"] > 0
        assert full["prefill_utilisation_mean"] is not None
        assert 0 < full["kv_held_mean"] < 1  # requests held some KV while they ran


def test_cli_replays_and_reports_why_a_target_failed(tmp_path: Path, capsys: Any) -> None:
    trace = agent_trace(tmp_path / "t.jsonl")
    bad_config = tmp_path / "mine.yaml"
    bad_config.write_text("routes: [{name: elsewhere}]\n")
    out = tmp_path / "report.json"
    argv = [
        "--trace", str(trace), "--policies", "least-load", "--config", str(bad_config),
        "--fleet-size", "2", "--time-scale", str(TIME_SCALE), "--json", str(out),
        "--prefill-tokens-per-s", "50000", "--no-progress", "--classes", "--tenant-weights", "2,1",
        "--timeline-s", "0.1",
    ]  # fmt: skip

    assert main(argv) == 0

    rows = orjson.loads(out.read_bytes())
    assert [row["policy"] for row in rows] == ["least-load", "config:mine"]
    good, bad = rows
    assert good["error"] is None and good["requests"] == 10 and good["errors"] == 0
    assert good["parameters"]["fleet_size"] == 2 and good["parameters"]["time_scale"] == TIME_SCALE
    at_e2e = good["offline_hit_ratios_at_e2e_p50"]  # the offline routers at this run's pace
    assert set(at_e2e) == {"round-robin", "longest-prefix", "bounded-longest-prefix"}
    assert all(0 <= ratio <= good["oracle_hit_ratio"] for ratio in at_e2e.values())
    rule = good["parameters"]["class_rule"]
    assert rule == {"seed": 0, "interactive_share": 0.3, "tenant_weights": [2.0, 1.0]}
    assert sum(group["requests"] for group in good["by_class"].values()) == 10
    assert set(good["by_tenant"]) <= {"tenant-0", "tenant-1"}
    assert sum(window["requests"] for window in good["timeline"]) == 10
    assert good["late_unanswered"] + good["refused_before_deadline"] <= 10
    assert good["recovery_s"] is None  # the trace has no burst
    assert "no route named 'default'" in bad["error"]
    assert set(MEASURE_KEYS) <= set(bad) and bad["ttft_ms_p50"] is None
    printed = capsys.readouterr().out
    assert "| least-load |" in printed and "config:mine: not measured" in printed
    assert "least-load per class and tenant" in printed and "| tenant tenant-0 |" in printed
    assert "least-load deadlines (TTFT SLO 2,000 ms): " in printed
    assert "least-load per 0.1 s window" in printed and "| 0-0.1 |" in printed
    assert "classes by seed 0: 30% of sessions interactive, tenants 2:1" in printed


def test_render_survives_rows_without_measures() -> None:
    params = {
        "trace_name": "t", "requests": 1, "time_scale": 1.0, "time_scale_is_default": True,
        "fleet_size": 1, "kv_capacity_tokens": 1, "prefill_tokens_per_s": 1.0,
        "decode_base_ms": 1.0, "decode_per_seq_ms": 0.0, "ttft_slo_ms": 1.0, "tpot_slo_ms": 1.0,
    }  # fmt: skip
    rows = [complete_row({"policy": "sglang", "error": "pip install failed"}, 0.5, params)]
    assert "sglang: not measured: pip install failed" in render(rows, params)


def test_flow_control_targets_replay_with_classes(tmp_path: Path) -> None:
    trace = agent_trace(tmp_path / "t.jsonl")
    out = tmp_path / "report.json"
    argv = [
        "--trace", str(trace), "--policies",
        "cache-aware-deadline,cache-aware-fc,cache-aware-classes",
        "--fleet-size", "2", "--time-scale", str(TIME_SCALE), "--json", str(out),
        "--prefill-tokens-per-s", "50000", "--no-progress", "--classes",
    ]  # fmt: skip

    assert main(argv) == 0

    rows = {row["policy"]: row for row in orjson.loads(out.read_bytes())}
    for row in rows.values():
        assert row["error"] is None and row["requests"] == 10
        groups = row["by_class"].values()
        # Every request went through flow control and says what it did.
        admitted = sum(sum(group["admission"].values()) for group in groups)
        assert admitted + sum(group["shed"] for group in groups) == 10
        assert row["errors"] == sum(group["shed"] for group in groups)
    for holding in ("cache-aware-fc", "cache-aware-classes"):
        words = {word for group in rows[holding]["by_class"].values()
                 for word in group["admission"]}  # fmt: skip
        assert words <= {"immediate", "queued"}

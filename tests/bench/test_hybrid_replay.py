"""The hybrid fleet: local engines and emulated clouds through the CLI, with costs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.replay.cli import main
from bench.replay.costs import cost_summary, metric_total, request_cost_usd
from bench.replay.fleet import EngineOptions
from bench.replay.hybrid import ANTHROPIC_PRICES, LOCAL_PRICES, OPENAI_PRICES, plan_hybrid
from bench.replay.metrics import Slo
from bench.replay.profiles import PROFILES, FleetRoute, profile_config
from bench.replay.schedule import RequestResult
from gateway.config.root import parse_config
from policies.prices import Prices
from tests.bench.synthetic import agent_trace

LOCAL = Prices.model_validate(LOCAL_PRICES)
OPENAI = Prices.model_validate(OPENAI_PRICES)
ANTHROPIC = Prices.model_validate(ANTHROPIC_PRICES)
PRICES = {"local": LOCAL, "openai": OPENAI, "anthropic": ANTHROPIC}


def result(backend: str | None, ok: bool = True, **tokens: int) -> RequestResult:
    return RequestResult(
        request_id="r", ok=ok, sent_at=0.0, done_at=1.0, first_token_at=0.1, backend=backend,
        **tokens,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("res", "usd"),
    [
        pytest.param(
            result("local", prompt_tokens=10_000, completion_tokens=100),
            (10_000 * 0.05 + 100 * 0.2) / 1e6,
            id="local-amortised",
        ),
        pytest.param(
            result("openai", prompt_tokens=10_000, cached_tokens=8_000, completion_tokens=100),
            (2_000 * 2.0 + 8_000 * 0.5 + 100 * 8.0) / 1e6,
            id="openai-cached-input",
        ),
        pytest.param(
            result(
                "anthropic",
                prompt_tokens=10_000,
                cached_tokens=4_000,
                cache_write_tokens=5_000,
                completion_tokens=100,
            ),
            (1_000 * 3.0 + 4_000 * 0.3 + 5_000 * 3.75 + 100 * 15.0) / 1e6,
            id="anthropic-read-and-write",
        ),
        pytest.param(
            result("anthropic", prompt_tokens=250_000, completion_tokens=100),
            (250_000 * 6.0 + 100 * 22.5) / 1e6,
            id="anthropic-200k-tier",
        ),
        pytest.param(result("openai", ok=False), 0.0, id="failed-costs-nothing"),
        pytest.param(result(None, prompt_tokens=10), 0.0, id="no-backend"),
    ],
)
def test_request_cost_is_usage_times_prices(res: RequestResult, usd: float) -> None:
    assert request_cost_usd(res, PRICES) == pytest.approx(usd)


def test_cost_per_good_request_counts_all_spend() -> None:
    good = result("openai", prompt_tokens=100_000)  # $0.20
    slow = RequestResult("s", True, 0.0, 10.0, first_token_at=9.0, backend="openai",
                         prompt_tokens=100_000)  # fmt: skip
    summary = cost_summary([good, slow], PRICES, Slo(ttft_ms=1000, tpot_ms=100), 1.0)
    assert summary["total_cost_usd"] == pytest.approx(0.4)
    assert summary["cost_per_1k_requests_usd"] == pytest.approx(200.0)
    assert summary["cost_per_good_request_usd"] == pytest.approx(0.4)  # the slow one's too
    assert summary["cost_usd_by_backend"]["openai"] == pytest.approx(0.4)


def test_metric_total_sums_label_sets() -> None:
    page = (
        "# TYPE switchyard_cost_usd_total counter\n"
        'switchyard_cost_usd_total{backend="a"} 0.5\n'
        'switchyard_cost_usd_total{backend="b"} 0.25\n'
        "switchyard_cost_usd_total_created 1.7e9\n"
    )
    assert metric_total(page) == pytest.approx(0.75)


def _bounds(row: dict[str, Any], name: str, prices: Prices) -> tuple[float, float]:
    """The least and most a backend's prompt and completion tokens can cost: every uncached
    prompt token at the input price, or written to the cache."""
    b = row["backends"][name]
    rates = prices.rates(0)
    prompt, cached, out = b["prompt_tokens"], b["cached_tokens"], b["completion_tokens"]
    fixed = cached * rates.cached_input + out * rates.output
    low = fixed + (prompt - cached) * min(rates.input, rates.cache_write)
    high = fixed + (prompt - cached) * max(rates.input, rates.cache_write)
    return low / 1e6, high / 1e6


def test_hybrid_fleet_reports_costs_consistent_with_usage(tmp_path: Path) -> None:
    trace = agent_trace(tmp_path / "t.jsonl", shared_chars=12_000)
    out = tmp_path / "out.json"
    argv = ["--trace", str(trace), "--fleet", "hybrid", "--policies", "round-robin",
            "--time-scale", "0.05", "--json", str(out), "--no-progress",
            "--logs", str(tmp_path / "logs")]  # fmt: skip
    assert main(argv) == 0
    (row,) = orjson.loads(out.read_bytes())
    assert row["error"] is None and row["errors"] == 0
    assert row["parameters"]["fleet"] == "hybrid"
    backends = row["backends"]
    assert set(backends) == {"local-0", "local-1", "cloud-openai", "cloud-anthropic"}
    assert all(b["requests"] > 0 for b in backends.values())  # round-robin reaches every one
    # Each backend's cost is its usage at its prices (prompts here stay below 200K).
    for name, prices in (("local-0", LOCAL), ("local-1", LOCAL), ("cloud-openai", OPENAI)):
        low, high = _bounds(row, name, prices)
        assert low == pytest.approx(high)
        assert backends[name]["cost_usd"] == pytest.approx(low, rel=1e-4, abs=1e-6)
    low, high = _bounds(row, "cloud-anthropic", ANTHROPIC)
    assert low - 1e-6 <= backends["cloud-anthropic"]["cost_usd"] <= high + 1e-6
    total = sum(b["cost_usd"] for b in backends.values())
    assert row["total_cost_usd"] == pytest.approx(total, abs=1e-5)
    # The gateway prices its own records independently: the same total.
    assert row["gateway_cost_usd"] == pytest.approx(row["total_cost_usd"], rel=1e-3, abs=1e-6)
    per_1k = 1000 * total / row["requests"]
    assert row["cost_per_1k_requests_usd"] == pytest.approx(per_1k, rel=1e-3)
    good = round(row["goodput_ratio"] * row["requests"])
    assert good > 0
    assert row["cost_per_good_request_usd"] == pytest.approx(total / good, rel=1e-3)


@pytest.mark.parametrize("policy", ["round-robin", "cheapest-price", "cost-aware", "cost-aware-fc"])
def test_hybrid_configs_are_valid_gateway_configs(policy: str) -> None:
    plan = plan_hybrid(EngineOptions(count=4, time_scale=0.5, models=("emulated-model",)))
    ports = zip(plan.names, plan.fleet.ports, strict=True)
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports}
    fleet = FleetRoute("default", "emulated-model", urls, 100, entries=plan.backends,
                       sla={"ttft_ms": 1000.0, "tpot_ms": 30.0})  # fmt: skip
    config = parse_config(profile_config(PROFILES[policy], fleet, port=0), source=policy)
    kinds = {b.name: b.kind for b in config.backends}
    assert kinds == {
        "local-0": "openai-compatible",
        "local-1": "openai-compatible",
        "cloud-openai": "openai",
        "cloud-anthropic": "anthropic",
    }
    # Wall-clock figures are the trace's at time scale 0.5: a 5-min TTL is 150 s.
    anthropic = next(b for b in config.backends if b.name == "cloud-anthropic")
    assert anthropic.cache.ttl_s == pytest.approx(150.0)
    assert anthropic.cache.breakpoints.enabled


def test_cost_aware_fc_puts_the_clouds_behind_the_local_engines() -> None:
    plan = plan_hybrid(EngineOptions(count=4, time_scale=0.5, models=("emulated-model",)))
    ports = zip(plan.names, plan.fleet.ports, strict=True)
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports}
    sla = {"ttft_ms": 1000.0, "tpot_ms": 30.0}
    fleet = FleetRoute("default", "emulated-model", urls, 100, entries=plan.backends, sla=sla)
    config = parse_config(profile_config(PROFILES["cost-aware-fc"], fleet, port=0))
    routes = {r.name: r for r in config.routes}
    assert routes["default"].backend_names == ("local-0", "local-1")
    assert routes["default"].fallbacks == ["default-cloud"]
    assert routes["default-cloud"].backend_names == ("cloud-openai", "cloud-anthropic")
    assert routes["default"].sla.ttft_ms == routes["default-cloud"].sla.ttft_ms == 1000.0


def test_spilling_to_a_cloud_needs_the_hybrid_fleet() -> None:
    fleet = FleetRoute("default", "m", {"engine-0": "http://127.0.0.1:1"}, 100)
    with pytest.raises(ValueError, match="needs the hybrid fleet"):
        profile_config(PROFILES["cost-aware-fc"], fleet, port=0)

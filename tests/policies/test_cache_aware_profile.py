"""Scenarios for the cache-aware policies working together in a real `Pipeline`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest

from gateway.config.root import load_config
from policies.config import PluginRef, PolicyConfig, ProfileConfig
from policies.decision import Decision
from policies.pipeline import Pipeline
from policies.profiles import build_pipeline
from policies.snapshot import BackendView
from tests.policies.builders import backend, snapshot

CACHE_AWARE: list[str | tuple[str, float]] = [
    "healthy-filter",
    "bounded-load-filter",
    "sla-filter",
    ("kv-cost-scorer", 3.0),
    ("prefix-cache-scorer", 1.0),
    ("load-scorer", 1.0),
    "max-score-picker",
]
PROMPT = 13_100


def pipeline(
    refs: Sequence[str | tuple[str, float]], policies: Sequence[PolicyConfig] = ()
) -> Pipeline:
    plugins = [
        PluginRef(ref=r) if isinstance(r, str) else PluginRef(ref=r[0], weight=r[1]) for r in refs
    ]
    return build_pipeline(
        ProfileConfig(name="cache-aware", plugins=plugins), policies, profile_index=0
    )


def decide(
    pipe: Pipeline,
    candidates: Sequence[BackendView],
    cached: dict[str, int],
    *,
    seed: int = 0,
    ttft_slo_ms: float | None = None,
) -> Decision:
    snap = snapshot(
        candidates,
        prompt_tokens=PROMPT,
        cached_tokens=cached,
        rng_seed=seed,
        ttft_slo_ms=ttft_slo_ms,
    )
    return pipe.decide(snap, candidates, f"d{seed}")


@pytest.mark.parametrize(
    "load",
    [
        pytest.param({}, id="idle"),
        pytest.param(
            {"in_flight": 4, "queued_prefill_tokens": 6_000, "decoding": 3}, id="equally-busy"
        ),
    ],
)
@pytest.mark.parametrize("profile", [CACHE_AWARE, ["kv-cost-scorer"]], ids=["full", "kv-cost"])
def test_cached_prefix_wins_when_loads_are_equal(
    load: dict[str, int], profile: list[str | tuple[str, float]]
) -> None:
    candidates = [backend(n, **load) for n in ("a", "b", "c")]
    decision = decide(pipeline(profile), candidates, {"b": 12_800})
    assert decision.chosen == "b"
    b = next(c for c in decision.candidates if c.backend == "b")
    assert b.scores["kv-cost-scorer"].reason.startswith("12,800 of 13,100 prompt tokens cached; ")


UNBOUNDED = [p for p in CACHE_AWARE if p != "bounded-load-filter"]


@pytest.mark.parametrize(
    "profile", [UNBOUNDED, ["kv-cost-scorer"]], ids=["cache-aware-unbounded", "kv-cost"]
)
def test_overloaded_cache_holder_loses_to_an_idle_cold_replica(
    profile: list[str | tuple[str, float]],
) -> None:
    # 60,000 queued prefill tokens on b dwarf the 12,800 its cache saves. (Scored without
    # bounded-load-filter, which would drop b for its 6 requests in flight before scoring.)
    candidates = [
        backend("a"),
        backend("b", in_flight=6, queued_prefill_tokens=60_000, decoding=4),
    ]
    decision = decide(pipeline(profile), candidates, {"b": 12_800})
    assert decision.chosen == "a"
    reports = {c.backend: c for c in decision.candidates}
    assert reports["a"].scores["kv-cost-scorer"].value == 1.0
    # (60,300 tokens at 10,000/s) + 30 chunked steps * 20 ms; 20 ms * (1 + 0.01 * 4)
    assert reports["b"].scores["kv-cost-scorer"].reason == (
        "12,800 of 13,100 prompt tokens cached; 6 in flight; predicted TTFT 6,630 ms, TPOT 20.8 ms"
    )


def simulate(pipe: Pipeline, n: int, steps: int, *, cache_spreads: bool) -> dict[str, int]:
    """`steps` requests for one prefix, first cached on b0; nothing completes, so the
    chosen backend's in_flight grows by one per decision."""
    fleet = {f"b{i}": backend(f"b{i}") for i in range(n)}
    cached = {"b0": 12_800}
    for step in range(steps):
        candidates = list(fleet.values())
        chosen = decide(pipe, candidates, dict(cached), seed=step).chosen
        assert chosen is not None
        fleet[chosen] = dataclasses.replace(fleet[chosen], in_flight=fleet[chosen].in_flight + 1)
        if cache_spreads:  # the prompt is now in the chosen backend's cache too
            cached[chosen] = 12_800
    return {name: b.in_flight for name, b in fleet.items()}


BOUNDED_PROFILES = {
    "bounded+kv-cost": ["healthy-filter", "bounded-load-filter", "kv-cost-scorer"],
    "cache-aware": CACHE_AWARE,
}


@pytest.mark.parametrize("cache_spreads", [False, True], ids=["static-cache", "cache-spreads"])
@pytest.mark.parametrize("n", [4, 8])
@pytest.mark.parametrize("profile", list(BOUNDED_PROFILES))
def test_bounded_load_caps_a_hot_prefix(profile: str, n: int, cache_spreads: bool) -> None:
    loads = simulate(pipeline(BOUNDED_PROFILES[profile]), n, 100, cache_spreads=cache_spreads)
    mean = sum(loads.values()) / n
    assert max(loads.values()) / mean <= 1.25 + 1 / n
    assert loads["b0"] >= mean  # the prefix's home keeps at least its share


def test_without_the_bound_a_hot_prefix_piles_up() -> None:
    loads = simulate(pipeline(["kv-cost-scorer"]), 4, 100, cache_spreads=False)
    assert loads == {"b0": 100, "b1": 0, "b2": 0, "b3": 0}


def test_sla_filter_drops_a_backend_predicted_to_miss() -> None:
    # Without the filter, prefix affinity would pick a despite the 20,000 queued tokens.
    refs = ["healthy-filter", "sla-filter", "prefix-cache-scorer", "max-score-picker"]
    candidates = [backend("a", queued_prefill_tokens=20_000), backend("b")]
    assert decide(pipeline(refs[2:]), candidates, {"a": 12_800}).chosen == "a"

    decision = decide(pipeline(refs), candidates, {"a": 12_800}, ttft_slo_ms=1_500)
    reports = {c.backend: c for c in decision.candidates}
    assert decision.chosen == "b"
    assert (reports["a"].dropped_by, reports["a"].drop_reason) == (
        "sla-filter",
        "predicted TTFT 2,030 ms > target 1,500 ms",
    )
    assert reports["b"].verdicts["sla-filter"].reason == "predicted TTFT 1,310 ms ≤ target 1,500 ms"


def test_sla_filter_keeps_all_when_all_miss_unless_strict() -> None:
    refs = ["healthy-filter", "sla-filter", "prefix-cache-scorer", "max-score-picker"]
    candidates = [backend("a", queued_prefill_tokens=20_000), backend("b")]
    decision = decide(pipeline(refs), candidates, {"a": 12_800}, ttft_slo_ms=500)
    assert decision.chosen == "a"
    assert decision.candidates[1].verdicts["sla-filter"].reason == (
        "all candidates predicted to miss TTFT 500 ms; keeping all "
        "(predicted TTFT 1,310 ms > target 500 ms)"
    )

    strict = PolicyConfig(type="sla-filter", name="sla-filter", params={"strict": True})
    decision = decide(pipeline(refs, [strict]), candidates, {"a": 12_800}, ttft_slo_ms=500)
    assert (decision.chosen, decision.picker_reason) == (
        None,
        "no candidates left after sla-filter",
    )


def test_a_cache_miss_goes_to_the_idle_new_replica() -> None:
    # Requests with no cached prefix anywhere are how a new replica warms up.
    candidates = [
        backend("old-1", in_flight=5, queued_prefill_tokens=3_000, decoding=4),
        backend("old-2", in_flight=4, queued_prefill_tokens=2_000, decoding=4),
        backend("new"),
    ]
    assert decide(pipeline(CACHE_AWARE), candidates, {}).chosen == "new"


@pytest.mark.parametrize(("temperature", "low", "high"), [(0.1, 0.80, 0.95), (0.02, 0.995, 1.0)])
def test_exploration_with_a_low_temperature_picker(
    temperature: float, low: float, high: float
) -> None:
    # kv-cost scores the idle cold replicas 2,590 / 3,870 = 0.67 against the idle hot one;
    # at temperature 0.1 each gets exp(-0.33 / 0.1) = 3.7% of the hot one's weight.
    explore = PolicyConfig(
        type="weighted-random-picker", name="explore", params={"temperature": temperature}
    )
    pipe = pipeline(["kv-cost-scorer", "explore"], [explore])
    candidates = [backend(n) for n in ("hot", "cold-1", "cold-2", "cold-3")]
    chosen = [decide(pipe, candidates, {"hot": 12_800}, seed=s).chosen for s in range(2_000)]
    assert low <= chosen.count("hot") / len(chosen) <= high


def embedded_cache_aware() -> Pipeline:
    """The embedded default's cache-aware profile, from the file users start with."""
    config = load_config(EMBEDDED)
    index = next(i for i, p in enumerate(config.profiles) if p.name == "cache-aware")
    return build_pipeline(config.profiles[index], config.policies, profile_index=index)


EMBEDDED = Path(__file__).parents[2] / "gateway" / "examples" / "embedded.yaml"


def test_default_keeps_a_hot_prefix_home_and_sends_cold_prompts_elsewhere() -> None:
    """The hot document's engine serves 30 requests and holds 12,800 of this prompt's
    tokens: a follow-up stays there however busy it is (its 300 uncached tokens hold up
    little), while a cold prompt goes to the engine where its prefill holds up fewest."""
    pipe = embedded_cache_aware()
    candidates = [
        backend("hot", in_flight=30, decoding=28),
        backend("warm", in_flight=12, decoding=10),
        backend("quiet", in_flight=6, decoding=6),
    ]
    follow_up = decide(pipe, candidates, {"hot": 12_800})
    assert follow_up.chosen == "hot"
    cold = decide(pipe, candidates, {})
    assert cold.chosen == "quiet"
    hot = next(c for c in cold.candidates if c.backend == "hot")
    assert hot.scores["kv-cost"].reason.endswith("its prefill holds up 30 others by 1,310 ms")

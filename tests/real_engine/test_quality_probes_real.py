"""The gateway's quality probes on real llama.cpp replicas: healthy twins are never flagged,
a replica with a q4_0 KV cache is, and a cut context is found by the needle probe.

Assertions are on verdicts and states, never on time (`switchyard bench quality-real`
measures the distributions behind them; docs/quality.md).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.quality_real.campaign import CampaignSettings, run_scenario
from bench.quality_real.replicas import EngineSetup, running_engine
from bench.quality_real.scenarios import Scenario
from bench.quality_real.stats import first_cycle, flag_counts
from gateway.engines.state import Replica
from gateway.quality.book.quality_book import QualityBook
from gateway.quality.config import ProbeConfig, QualityConfig
from gateway.quality.probes.prober import Prober, ProbeResult
from providers.registry import open_provider
from providers.settings import ProviderSettings

TWINS = Scenario("twins", "identical twin", "twins", EngineSetup())  # canary only: fast
KV_Q4 = Scenario(
    "kv-q4_0", "KV cache q4_0", "fault", EngineSetup(cache_type_k="q4_0", cache_type_v="q4_0")
)


def test_identical_twins_are_never_flagged(llama_replicas: list[Replica]) -> None:
    settings = CampaignSettings(cycles=5)
    run = asyncio.run(run_scenario(TWINS, llama_replicas[0], llama_replicas[1], None, settings))
    records = run.subject + run.reference
    assert run.top_logprobs == [5, 5, 5], "llama-server returns top_logprobs on chat completions"
    assert flag_counts(records) == {}
    assert {r.state for r in records} == {"healthy"}
    assert max(d for r in records for d in r.drifts) <= settings.drift_threshold


def test_a_q4_0_kv_cache_is_caught_within_two_cycles(
    llama_replicas: list[Replica], llama_model: Path, tmp_path: Path
) -> None:
    settings = CampaignSettings(cycles=2)
    with running_engine("kv-q4_0", llama_model, KV_Q4.setup, tmp_path) as degraded:
        run = asyncio.run(
            run_scenario(KV_Q4, llama_replicas[0], llama_replicas[1], degraded, settings)
        )
    after_swap = [r for r in run.subject if r.cycle >= 1]
    assert first_cycle(after_swap) == 1, "a canary drifted past the threshold at once"
    assert first_cycle(after_swap, flagged=False) is not None, "and the book ejected it"
    assert all(r.state == "healthy" for r in run.reference), "the reference is spared"
    assert not run.subject[0].flagged, "the healthy twin it replaced was not flagged"


def test_a_context_cut_to_1024_tokens_fails_the_needle(llama_model: Path, tmp_path: Path) -> None:
    with running_engine("ctx-1024", llama_model, EngineSetup(ctx_size=1024), tmp_path) as cut:
        result = asyncio.run(_needle_once(cut))
    assert result.ok is False
    assert "its context holds 1,024 tokens" in result.detail  # llama-server refuses, HTTP 400


async def _needle_once(replica: Replica) -> ProbeResult:
    config = ProbeConfig(canary=False, tool_call=False, needle_tokens=2000, timeout_s=120)
    book = QualityBook(QualityConfig(probes=config))
    settings = ProviderSettings(name="cut", kind="llama-cpp", base_url=replica.base_url)
    provider = await open_provider(settings)
    try:
        prober = Prober({"cut": config}, book, {"cut": provider}, [("cut", "smollm2")])
        (result,) = await prober.run_cycle()
    finally:
        await provider.close()
    return result

"""Probe cycles on real replicas through the gateway's own parts: the `llama-cpp` provider
adapter, the `Prober` (canary baselines, needle), the `QualityBook` and its states.

Time is virtual between cycles, as in `bench.quality.detection`: each cycle is
`interval_s` after the last, so evidence decays in the book as it would in a gateway
probing every five minutes, while the cycles themselves run back to back.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from bench.quality_real.scenarios import Scenario
from bench.quality_real.stats import CycleRecord
from gateway.engines.state import Replica
from gateway.quality.book.quality_book import QualityBook
from gateway.quality.config import ProbeConfig, QualityConfig
from gateway.quality.probes.canary import CANARY_PROMPTS
from gateway.quality.probes.prober import Prober, ProbeResult
from providers.base import Provider
from providers.registry import open_provider
from providers.settings import ProviderSettings

MODEL = "smollm2"
REFERENCE, SUBJECT = "reference", "subject"


@dataclass(frozen=True, slots=True)
class CampaignSettings:
    cycles: int
    interval_s: float = 300.0
    drift_threshold: float = 0.15
    needle_tokens: int = 2000
    """The prober's setting; its filler runs ~0.63 SmolLM2 tokens per configured token."""
    timeout_s: float = 180.0
    """Per probe: a needle's prefill on one busy CPU thread can take most of a minute."""
    seed: int = 7


@dataclass
class ScenarioRun:
    scenario: Scenario
    settings: CampaignSettings
    subject: list[CycleRecord] = field(default_factory=list)
    reference: list[CycleRecord] = field(default_factory=list)
    top_logprobs: list[int] = field(default_factory=list)
    """How many top alternatives the reference canary answers carried, per prompt."""
    seconds: float = 0.0


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def open_replica(name: str, replica: Replica) -> Provider:
    """The adapter a gateway opens for a `kind: llama-cpp` backend at this replica."""
    return await open_provider(
        ProviderSettings(name=name, kind="llama-cpp", base_url=replica.base_url)
    )


def probe_config(scenario: Scenario, settings: CampaignSettings) -> ProbeConfig:
    # No tool-call probe: SmolLM2-135M's template declares no tools, and llama-server then
    # answers a forced call with text on every replica (see `tool_call_check`).
    return ProbeConfig(
        interval_s=settings.interval_s,
        timeout_s=settings.timeout_s,
        tool_call=False,
        needle=scenario.needle,
        needle_tokens=settings.needle_tokens,
        drift_threshold=settings.drift_threshold,
    )


async def run_scenario(
    scenario: Scenario,
    reference: Replica,
    twin: Replica,
    subject: Replica | None,
    settings: CampaignSettings,
) -> ScenarioRun:
    """A warm-up cycle on the healthy pair (it sets the canary references), then the
    subject replaced by the scenario's replica (twins: kept) for `settings.cycles` cycles."""
    run, started = ScenarioRun(scenario, settings), time.monotonic()
    clock = VirtualClock()
    cfg = probe_config(scenario, settings)
    book = QualityBook(QualityConfig(probes=cfg), clock=clock, rng=random.Random(settings.seed))
    providers = {
        REFERENCE: await open_replica(REFERENCE, reference),
        SUBJECT: await open_replica(SUBJECT, twin),
    }
    opened = list(providers.values())
    try:
        prober = Prober(
            dict.fromkeys(providers, cfg),
            book,
            providers,
            [(n, MODEL) for n in providers],
            clock=clock,
            rng=random.Random(settings.seed),
        )
        await _cycle(run, prober, book, clock, 0)
        run.top_logprobs = _top_counts(prober)
        if subject is not None:
            providers[SUBJECT] = await open_replica(SUBJECT, subject)
            opened.append(providers[SUBJECT])
        for cycle in range(1, settings.cycles + 1):
            await _cycle(run, prober, book, clock, cycle)
    finally:
        for provider in opened:
            await provider.close()
    run.seconds = time.monotonic() - started
    return run


async def _cycle(
    run: ScenarioRun, prober: Prober, book: QualityBook, clock: VirtualClock, cycle: int
) -> None:
    clock.now += run.settings.interval_s
    book.refresh()
    results = await prober.run_cycle()
    book.refresh()
    for backend, records in ((SUBJECT, run.subject), (REFERENCE, run.reference)):
        mine = [r for r in results if r.backend == backend]
        records.append(_record(cycle, backend, mine, book.view(backend, MODEL).state))


def _record(cycle: int, backend: str, results: list[ProbeResult], state: str) -> CycleRecord:
    needle = next((r.detail for r in results if r.kind == "needle"), "")
    return CycleRecord(
        cycle=cycle,
        backend=backend,
        drifts=tuple(r.drift for r in results if r.kind == "canary" and r.drift is not None),
        flagged=tuple(r.kind for r in results if r.ok is False),
        unjudged=tuple(r.kind for r in results if r.ok is None),
        state=state,
        needle=needle,
    )


def _top_counts(prober: Prober) -> list[int]:
    counts = []
    for index in range(len(CANARY_PROMPTS)):
        answer = prober.baselines.reference(MODEL, index)
        counts.append(len(answer.top) if answer is not None and answer.top is not None else 0)
    return counts


async def tool_call_check(replica: Replica, cycles: int = 2) -> list[dict[str, Any]]:
    """The tool-call probe alone on a healthy replica: does this model pass it at all?"""
    clock = VirtualClock()
    cfg = ProbeConfig(canary=False, needle=False)
    book = QualityBook(QualityConfig(probes=cfg), clock=clock)
    provider = await open_replica(REFERENCE, replica)
    try:
        prober = Prober(
            {REFERENCE: cfg}, book, {REFERENCE: provider}, [(REFERENCE, MODEL)], clock=clock
        )
        results = [r for _ in range(cycles) for r in await prober.run_cycle()]
    finally:
        await provider.close()
    return [{"ok": r.ok, "detail": r.detail} for r in results]

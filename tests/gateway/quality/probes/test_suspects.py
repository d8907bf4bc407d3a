"""Targeted probes of suspects, against real emulated engines on loopback."""

from __future__ import annotations

import random

from gateway.quality.book.quality_book import QualityBook
from gateway.quality.config import ProbeConfig, QualityConfig
from gateway.quality.probes.suspects import SuspectProber
from gateway.quality.signals.observation import SignalEvent
from providers.openai_compatible import OpenAICompatibleProvider
from tests.conftest import StartEmulator

MODEL = "emulated-model"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def suspect_book(signal: str) -> tuple[QualityBook, Clock]:
    clock = Clock()
    book = QualityBook(QualityConfig(ejection_jitter=0.0), clock=clock, rng=random.Random(1))
    for index in range(7):
        clock.now += 1
        book.record("a", MODEL, [SignalEvent(signal, index == 6, "fidelity", "bad")])
    assert book.view("a", MODEL).state == "suspect"
    return book, clock


async def probe_until_decided(
    start_emulator: StartEmulator, signal: str, faults: dict[str, object], **probes: object
) -> tuple[QualityBook, SuspectProber]:
    engine = await start_emulator(faults={**faults, "seed": 3})
    book, clock = suspect_book(signal)
    provider = OpenAICompatibleProvider("a", engine.base_url, None)
    config = ProbeConfig.model_validate({"suspect_interval_s": 10.0, **probes})
    prober = SuspectProber({"a": config}, book, {"a": provider}, [("a", MODEL)], clock=clock)
    try:
        for _ in range(200):
            await prober.run_once()
            clock.now += 10.0
            if book.view("a", MODEL).state != "suspect":
                break
    finally:
        await provider.close()
    return book, prober


async def test_a_looping_suspect_is_probed_with_text_until_convicted(
    start_emulator: StartEmulator,
) -> None:
    book, prober = await probe_until_decided(start_emulator, "repetition", {"loop_rate": 1.0})
    assert book.view("a", MODEL).state == "ejected"
    assert prober.probes <= 6
    entry = book.audit("a", MODEL)[-1]
    assert (entry.before, entry.after) == ("suspect", "ejected")
    assert "suspect probe (text): bad: looping output" in entry.probes


async def test_a_tool_call_suspect_is_probed_with_tools(start_emulator: StartEmulator) -> None:
    faults = {"malformed_tool_call_rate": 1.0}
    book, _ = await probe_until_decided(start_emulator, "tool_call", faults)
    assert book.view("a", MODEL).state == "ejected"
    probes = book.audit("a", MODEL)[-1].probes
    assert any(p.startswith("suspect probe (tools): bad") for p in probes)


async def test_a_healthy_suspect_is_cleared(start_emulator: StartEmulator) -> None:
    book, prober = await probe_until_decided(start_emulator, "repetition", {})
    assert book.view("a", MODEL).state == "healthy"
    assert book.audit("a", MODEL)[-1].trigger.startswith("trial cleared")
    assert prober.probes < 100


async def test_suspect_probes_keep_to_their_budget(start_emulator: StartEmulator) -> None:
    book, prober = await probe_until_decided(
        start_emulator, "repetition", {}, suspect_max_tokens_per_hour=300
    )
    assert book.view("a", MODEL).state == "suspect"
    assert 1 <= prober.probes <= 3
    assert prober.skipped > 0

"""Signals judged against peers: compared on like requests, with healthy peers only."""

from __future__ import annotations

import random

import pytest

from gateway.quality.book.quality_book import QualityBook
from gateway.quality.config import QualityConfig, SignalParams
from gateway.quality.signals.observation import Observation, SignalEvent
from gateway.quality.signals.rules import max_tokens_hit_signal

TOOLS = {"lookup": {"type": "object"}}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def hit_event(backend: str, *, tools: bool, hit: bool, max_tokens: int = 64) -> SignalEvent:
    """The max_tokens_hit event a response makes, as the passive signals build it."""
    obs = Observation(
        backend,
        "m",
        0.0,
        "ok",
        finish_reason="length" if hit else ("tool_calls" if tools else "stop"),
        max_tokens=max_tokens,
        tools=TOOLS if tools else None,
    )
    verdict = max_tokens_hit_signal(obs, SignalParams())
    assert verdict is not None
    return verdict


def make_book() -> tuple[QualityBook, Clock]:
    clock = Clock()
    config = QualityConfig(ejection_jitter=0.0)
    return QualityBook(config, clock=clock, rng=random.Random(1)), clock


def test_the_stratum_names_the_kind_of_request() -> None:
    assert hit_event("a", tools=False, hit=True).stratum == "text/7"
    assert hit_event("a", tools=True, hit=False, max_tokens=4096).stratum == "tools/13"


def test_a_twin_asked_only_text_is_not_ejected_beside_peers_asked_a_mix() -> None:
    """The reported false ejection: like the emulator, every backend runs text answers to
    max_tokens and ends tool calls on the call. Three peers got text and tool requests,
    the twin (by affinity, load or chance) only text: 9 of 9 hit, peers 50 %. Compared
    overall, that was "far above peers" and ejected it after nine requests."""
    book, clock = make_book()
    for step in range(40):
        clock.now += 1
        for peer in ("loop35", "tools12", "twin-a"):
            book.record(peer, "m", [hit_event(peer, tools=step % 2 == 0, hit=step % 2 == 1)])
        book.refresh()
    for _ in range(30):
        clock.now += 1
        book.record("twin-b", "m", [hit_event("twin-b", tools=False, hit=True)])
        book.refresh()
        assert book.view("twin-b", "m").state == "healthy", book.view("twin-b", "m").reason
    assert book.audit("twin-b", "m") == []


def test_hitting_max_tokens_far_more_than_peers_on_like_requests_still_counts() -> None:
    book, clock = make_book()
    for step in range(60):
        clock.now += 1
        for peer in ("a", "b", "c"):
            book.record(peer, "m", [hit_event(peer, tools=step % 2 == 0, hit=step % 2 == 1)])
        # "cut" stops its tool calls at max_tokens too, where no peer does
        book.record("cut", "m", [hit_event("cut", tools=step % 2 == 0, hit=True)])
        book.refresh()
    assert book.view("cut", "m").state == "ejected"
    entry = book.audit("cut", "m")[0]
    assert (entry.before, entry.after) == ("healthy", "ejected")
    evidence = entry.signals[0]
    assert evidence.signal == "max_tokens_hit"
    assert evidence.peer_rate is not None
    assert {name for name, _ in evidence.peers} == {"a", "b", "c"}
    # compared on the strata peers had seen (tool calls first): peers never hit there
    assert evidence.peer_rate == 0.0
    assert evidence.score < QualityConfig().certain_below


@pytest.mark.parametrize("state", ["ejected", "suspect"])
def test_a_peer_under_suspicion_is_not_the_measure_of_others(state: str) -> None:
    book, clock = make_book()
    for _ in range(20):
        clock.now += 1
        book.record("a", "m", [hit_event("a", tools=False, hit=True)])
        book.record("b", "m", [hit_event("b", tools=False, hit=False)])
    book._pairs[("b", "m")].state = state  # type: ignore[assignment]
    book.refresh()
    # b's rate (0 %) is not a's baseline: with no healthy peer there is nothing to compare
    assert [s.signal for s in book.scores("a", "m")] == []
    assert book.view("a", "m").state == "unknown"

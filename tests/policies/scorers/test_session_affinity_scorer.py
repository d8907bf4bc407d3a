from __future__ import annotations

import random

import pytest

from policies.scorers.session_affinity_scorer import SessionAffinityScorer
from policies.snapshot import BackendView
from tests.policies.builders import fleet, snapshot

POLICY = SessionAffinityScorer("sticky", SessionAffinityScorer.Params())
FIVE = fleet("a", "b", "c", "d", "e")


def ranking(key: str, candidates: list[BackendView]) -> list[str]:
    scores = POLICY.score(snapshot(session_key=key), candidates)
    return sorted(scores, key=lambda n: -scores[n].value)


@pytest.mark.parametrize("key", ["user-1", "alice@example.com", "x", "🙂-session"])
def test_stable_for_a_key_whatever_the_candidate_order(key: str) -> None:
    expected = ranking(key, FIVE)
    shuffled = FIVE[:]
    for seed in range(5):
        random.Random(seed).shuffle(shuffled)
        assert ranking(key, shuffled) == expected


@pytest.mark.parametrize(("decay", "expected"), [(0.5, [1.0, 0.5, 0.25]), (0.9, [1.0, 0.9, 0.81])])
def test_scores_decay_by_rank(decay: float, expected: list[float]) -> None:
    policy = SessionAffinityScorer("sticky", SessionAffinityScorer.Params(decay=decay))
    scores = policy.score(snapshot(session_key="k"), FIVE[:3])
    assert sorted((s.value for s in scores.values()), reverse=True) == pytest.approx(expected)


@pytest.mark.parametrize("removed", ["a", "c", "e"])
def test_removing_a_backend_moves_only_its_sessions_to_their_next_choice(removed: str) -> None:
    remaining = [b for b in FIVE if b.name != removed]
    moved = 0
    for i in range(2000):
        before = ranking(f"session-{i}", FIVE)
        after = ranking(f"session-{i}", remaining)
        if before[0] == removed:
            moved += 1
            assert after[0] == before[1]
        else:
            assert after[0] == before[0]
    assert 0.15 < moved / 2000 < 0.25  # ~1/n of the keys


def test_sessions_spread_over_backends() -> None:
    firsts = [ranking(f"s{i}", FIVE)[0] for i in range(1000)]
    assert all(150 < firsts.count(b.name) < 250 for b in FIVE)


@pytest.mark.parametrize("key", [None, ""])
def test_no_session_key_is_neutral(key: str | None) -> None:
    scores = POLICY.score(snapshot(session_key=key), FIVE)
    assert {(s.value, s.reason) for s in scores.values()} == {(0.5, "no session key")}


def test_reasons_truncate_the_key() -> None:
    key = "alice@example.com"
    scores = POLICY.score(snapshot(session_key=key), FIVE[:3])
    reasons = sorted(s.reason for s in scores.values())
    assert reasons == [
        "session alic… pinned here (rank 1 of 3)",
        "session alic… rank 2 of 3",
        "session alic… rank 3 of 3",
    ]
    assert all("example" not in r for r in reasons)

from __future__ import annotations

from typing import Any

import pytest

from policies.scorers.load_scorer import LoadScorer
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("in_flight", "queued", "decoding", "params", "value", "reason"),
    [
        (0, 0, 0, {}, 1.0, "0 in flight, 0 prefill tokens queued, 0 decoding"),
        (8, 0, 8, {}, 0.5, "8 in flight, 0 prefill tokens queued, 8 decoding"),
        (
            1,
            8_192,
            0,
            {},
            1 / (1 + 1 / 8 + 1),
            "1 in flight, 8,192 prefill tokens queued, 0 decoding",
        ),
        (
            3,
            12_000,
            5,
            {},
            1 / (1 + 3 / 8 + 12_000 / 8192),
            "3 in flight, 12,000 prefill tokens queued, 5 decoding",
        ),
        (4, 0, 0, {"in_flight_scale": 4}, 0.5, "4 in flight, 0 prefill tokens queued, 0 decoding"),
        (
            0,
            2_000,
            0,
            {"tokens_scale": 1000},
            1 / 3,
            "0 in flight, 2,000 prefill tokens queued, 0 decoding",
        ),
    ],
)
def test_load_in_real_units(
    in_flight: int,
    queued: int,
    decoding: int,
    params: dict[str, float],
    value: float,
    reason: str,
) -> None:
    policy = LoadScorer("load", LoadScorer.Params.model_validate(params))
    b = backend("a", in_flight=in_flight, queued_prefill_tokens=queued, decoding=decoding)
    score = policy.score(snapshot([b]), [b])["a"]
    assert score.value == pytest.approx(value)
    assert score.reason == reason


def test_queued_tokens_outweigh_request_count() -> None:
    # One 30k-token document queued is more load than four short chats.
    policy = LoadScorer("load", LoadScorer.Params())
    candidates = [
        backend("doc", in_flight=1, queued_prefill_tokens=30_000),
        backend("chats", in_flight=4, queued_prefill_tokens=800),
    ]
    scores = policy.score(snapshot(candidates), candidates)
    assert scores["chats"].value > scores["doc"].value


OWN = "4 in flight, 0 prefill tokens queued, 2 decoding"


@pytest.mark.parametrize(
    ("engine", "params", "value", "reason"),
    [
        # Not scraped, or stale: the gateway's own counts only, reason unchanged.
        ({}, {}, 1 / (1 + 4 / 8), OWN),
        # The engine sees other clients' requests: 12 + 4 > our 4.
        (
            {"engine_running": 12, "engine_waiting": 4, "engine_kv_usage": 0.83},
            {},
            1 / (1 + 16 / 8),
            f"{OWN}; engine: 12 running, 4 waiting, KV 83%",
        ),
        # The engine lags behind our own dispatches: our count wins.
        (
            {"engine_running": 1, "engine_waiting": 0},
            {},
            1 / (1 + 4 / 8),
            f"{OWN}; engine: 1 running, 0 waiting",
        ),
        # Only running exported (no waiting gauge).
        ({"engine_running": 8}, {}, 1 / (1 + 8 / 8), f"{OWN}; engine: 8 running"),
        # KV usage is shown, and weighs only with kv_weight.
        ({"engine_kv_usage": 0.5}, {}, 1 / (1 + 4 / 8), f"{OWN}; engine: KV 50%"),
        (
            {"engine_kv_usage": 0.5},
            {"kv_weight": 2.0},
            1 / (1 + 4 / 8 + 1.0),
            f"{OWN}; engine: KV 50%",
        ),
    ],
)
def test_engine_reported_load(
    engine: dict[str, Any], params: dict[str, float], value: float, reason: str
) -> None:
    policy = LoadScorer("load", LoadScorer.Params.model_validate(params))
    b = backend("a", in_flight=4, decoding=2, **engine)
    score = policy.score(snapshot([b]), [b])["a"]
    assert score.value == pytest.approx(value)
    assert score.reason == reason


def test_engine_queue_from_other_clients_steers_traffic() -> None:
    # Equal gateway counts; only the engine knows `busy` is serving someone else's batch.
    policy = LoadScorer("load", LoadScorer.Params())
    candidates = [
        backend("busy", in_flight=1, engine_running=16, engine_waiting=5),
        backend("idle", in_flight=1, engine_running=1, engine_waiting=0),
    ]
    scores = policy.score(snapshot(candidates), candidates)
    assert scores["idle"].value > scores["busy"].value

from __future__ import annotations

import pytest

from policies.load_scorer import LoadScorer
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

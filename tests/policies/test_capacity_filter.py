from __future__ import annotations

import pytest

from policies.capacity_filter import CapacityFilter
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("in_flight", "limit", "keep", "reason"),
    [
        (0, 64, True, "0 of 64 in flight"),
        (63, 64, True, "63 of 64 in flight"),
        (64, 64, False, "at capacity: 64 of 64 in flight"),
        (70, 64, False, "at capacity: 70 of 64 in flight"),
        (1, 1, False, "at capacity: 1 of 1 in flight"),
    ],
)
def test_capacity(in_flight: int, limit: int, keep: bool, reason: str) -> None:
    policy = CapacityFilter("cap", CapacityFilter.Params())
    b = backend("a", in_flight=in_flight, max_concurrency=limit)
    verdict = policy.filter(snapshot([b]), [b])["a"]
    assert (verdict.keep, verdict.reason) == (keep, reason)

from __future__ import annotations

import pytest
from pydantic import ValidationError

from policies.filters.healthy_filter import HealthyFilter
from policies.snapshot import BackendView
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("health", "panic_mode", "kept", "reasons"),
    [
        pytest.param(
            {"a": True, "b": True}, True, {"a", "b"}, {"a": "healthy", "b": "healthy"}, id="all-up"
        ),
        pytest.param(
            {"a": True, "b": False},
            True,
            {"a"},
            {"a": "healthy", "b": "ejected: 3 consecutive failures"},
            id="one-down",
        ),
        pytest.param(
            {"a": False, "b": False, "c": False},
            True,
            {"a", "b", "c"},
            dict.fromkeys("abc", "panic: all 3 candidates unhealthy, keeping all"),
            id="panic",
        ),
        pytest.param(
            {"a": False, "b": False},
            False,
            set(),
            dict.fromkeys("ab", "ejected: 3 consecutive failures"),
            id="panic-off",
        ),
    ],
)
def test_healthy_filter(
    health: dict[str, bool], panic_mode: bool, kept: set[str], reasons: dict[str, str]
) -> None:
    policy = HealthyFilter("health", HealthyFilter.Params(panic_mode=panic_mode))
    candidates = [
        backend(n, healthy=up, health_reason="" if up else "ejected: 3 consecutive failures")
        for n, up in health.items()
    ]
    verdicts = policy.filter(snapshot(candidates), candidates)
    assert {n for n, v in verdicts.items() if v.keep} == kept
    assert {n: v.reason for n, v in verdicts.items()} == reasons


def test_unhealthy_without_reason_says_unhealthy() -> None:
    policy = HealthyFilter("health", HealthyFilter.Params())
    candidates = [backend("a"), backend("b", healthy=False)]
    assert policy.filter(snapshot(candidates), candidates)["b"].reason == "unhealthy"


DOWN = "ejected after 5 consecutive failures (upstream_500); back in 4.2s"


def _fleet(health: str) -> list[BackendView]:
    """One backend per character, named a, b, c, ...: `+` healthy, `-` unhealthy."""
    return [
        backend(chr(ord("a") + i), healthy=up == "+", health_reason="" if up == "+" else DOWN)
        for i, up in enumerate(health)
    ]


@pytest.mark.parametrize(
    ("health", "share", "panic_mode", "kept", "kept_back"),
    [
        # At most floor(share x candidates) are dropped; the first unhealthy ones in
        # candidate order are kept back in.
        pytest.param("+---", 0.5, True, "ab", "b", id="half-of-4-drops-2"),
        pytest.param("++--", 0.5, True, "ab", "", id="at-the-cap-nothing-kept-back"),
        pytest.param("-+-+-", 0.5, True, "abd", "a", id="half-of-5-rounds-down-to-2"),
        pytest.param("+--", 0.5, True, "ab", "b", id="half-of-3-rounds-down-to-1"),
        pytest.param("--+-", 0.75, True, "c", "", id="three-quarters-of-4-drops-3"),
        pytest.param("+----", 0.25, True, "abcd", "bcd", id="quarter-of-5-rounds-down-to-1"),
        # At least one may always be ejected, as in Envoy, however small the share.
        pytest.param("+--", 0.1, True, "ab", "b", id="tenth-of-3-still-drops-1"),
        pytest.param("+-", 0.01, True, "a", "", id="one-of-2-always-ejectable"),
        pytest.param("-", 0.5, False, "", "", id="a-lone-candidate-may-be-ejected"),
        # The default drops every unhealthy candidate, as before the cap existed.
        pytest.param("+---", 1.0, True, "a", "", id="default-share-uncapped"),
        # Panic mode first: an all-unhealthy pool is kept whole, with the panic reason.
        pytest.param("----", 0.5, True, "abcd", "", id="panic-wins-over-the-cap"),
        pytest.param("-", 0.5, True, "a", "", id="panic-for-a-lone-candidate"),
        # Without panic mode the cap still keeps some of an all-unhealthy pool.
        pytest.param("----", 0.5, False, "ab", "ab", id="no-panic-cap-keeps-half"),
        pytest.param("----", 1.0, False, "", "", id="no-panic-default-drops-all"),
    ],
)
def test_max_ejected_share(
    health: str, share: float, panic_mode: bool, kept: str, kept_back: str
) -> None:
    candidates = _fleet(health)
    params = HealthyFilter.Params(panic_mode=panic_mode, max_ejected_share=share)
    verdicts = HealthyFilter("health", params).filter(snapshot(candidates), candidates)
    assert "".join(b.name for b in candidates if verdicts[b.name].keep) == kept
    all_down = f"panic: all {len(candidates)} candidates unhealthy, keeping all"
    cap = f"kept: at most {share * 100:g}% of {len(candidates)} candidates may be ejected"
    for b in candidates:
        if b.name in kept_back:
            expected = f"unhealthy ({DOWN}), {cap}"
        elif panic_mode and "+" not in health:
            expected = all_down
        else:
            expected = "healthy" if b.healthy else DOWN
        assert verdicts[b.name].reason == expected


def test_the_share_counts_as_written_not_as_its_binary_product() -> None:
    # 0.29 * 100 is 28.999... in binary; the cap is still 29 of 100.
    candidates = [backend(f"b{i:02}", healthy=i < 70) for i in range(100)]
    params = HealthyFilter.Params(max_ejected_share=0.29)
    verdicts = HealthyFilter("health", params).filter(snapshot(candidates), candidates)
    assert [b.name for b in candidates if not verdicts[b.name].keep] == [
        f"b{i:02}" for i in range(71, 100)
    ]
    assert verdicts["b70"].reason == (
        "unhealthy, kept: at most 29% of 100 candidates may be ejected"
    )


@pytest.mark.parametrize("share", [0, -0.5, 1.01, 2])
def test_max_ejected_share_must_be_a_share(share: float) -> None:
    with pytest.raises(ValidationError, match="max_ejected_share"):
        HealthyFilter.Params(max_ejected_share=share)

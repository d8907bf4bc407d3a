"""The learned starting tier: what a kind of request is, the decayed and bounded book of
how kinds fared on each tier, and the policy that skips a tier the evidence says fails."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.cascade.config import CascadeStartConfig
from gateway.cascade.start import KindBook, TierEvidence, request_kind, start_tier

NAMES = ["cheap", "middle", "best"]
DOOMED = TierEvidence(attempts=10.0, failures=9.0)
FINE = TierEvidence(attempts=10.0, failures=1.0)
NEVER_EXPLORE = 0.99


def params(**fields: Any) -> CascadeStartConfig:
    return CascadeStartConfig.model_validate(fields)


# request_kind


@pytest.mark.parametrize(
    ("prompt_tokens", "band"),
    [
        (0, "len0"),
        (1, "len0"),
        (256, "len0"),
        (257, "len1"),
        (512, "len1"),
        (513, "len2"),
        (1024, "len2"),
        (1025, "len3"),
        (2048, "len3"),
        (2049, "len4"),
        (100_000, "len9"),
    ],
)
def test_the_prompts_length_band_doubles_from_256_tokens(prompt_tokens: int, band: str) -> None:
    assert request_kind(prompt_tokens, {}, None).split("|")[1] == band


@pytest.mark.parametrize(
    ("body", "key_id", "endpoint", "kind"),
    [
        ({}, None, "chat", "chat|len0|no-tools|text|-"),
        ({"tools": []}, None, "chat", "chat|len0|no-tools|text|-"),
        ({"tools": [{"type": "function"}]}, "k1", "chat", "chat|len0|tools|text|k1"),
        (
            {"response_format": {"type": "json_schema"}},
            None,
            "chat",
            "chat|len0|no-tools|json_schema|-",
        ),
        ({"response_format": "json"}, None, "chat", "chat|len0|no-tools|text|-"),
        ({"response_format": {"type": 3}}, None, "chat", "chat|len0|no-tools|text|-"),
        ({}, "k2", "responses", "responses|len0|no-tools|text|k2"),
    ],
)
def test_a_kind_is_made_of_tools_format_key_and_endpoint(
    body: dict[str, Any], key_id: str | None, endpoint: str, kind: str
) -> None:
    assert request_kind(10, body, key_id, endpoint=endpoint) == kind


# KindBook


def test_an_unseen_kind_has_no_evidence_on_any_tier() -> None:
    assert KindBook(8, 600.0).evidence("k", 3, 0.0) == [TierEvidence()] * 3


def test_attempts_and_failures_are_counted_per_tier() -> None:
    book = KindBook(8, 600.0)
    book.record("k", 0, 3, failed=True, now=0.0)
    book.record("k", 0, 3, failed=False, now=0.0)
    book.record("k", 2, 3, failed=False, now=0.0)
    assert book.evidence("k", 3, 0.0) == [
        TierEvidence(2.0, 1.0),
        TierEvidence(),
        TierEvidence(1.0, 0.0),
    ]
    assert book.evidence("other", 3, 0.0) == [TierEvidence()] * 3


def counts(book: KindBook, kind: str, tier: int, now: float) -> tuple[float, float]:
    seen = book.evidence(kind, 2, now)[tier]
    return seen.attempts, seen.failures


@pytest.mark.parametrize(
    ("now", "weight"), [(1000.0, 1.0), (1600.0, 0.5), (2200.0, 0.25), (7000.0, 2.0**-10)]
)
def test_evidence_halves_over_each_half_life(now: float, weight: float) -> None:
    book = KindBook(8, 600.0)
    book.record("k", 0, 2, failed=True, now=1000.0)
    assert counts(book, "k", 0, now) == pytest.approx((weight, weight))


def test_new_evidence_adds_to_the_decayed_old() -> None:
    book = KindBook(8, 600.0)
    book.record("k", 0, 2, failed=True, now=0.0)
    book.record("k", 0, 2, failed=False, now=600.0)
    assert counts(book, "k", 0, 600.0) == pytest.approx((1.5, 0.5))
    assert counts(book, "k", 0, 1200.0) == pytest.approx((0.75, 0.25))


def test_the_book_keeps_at_most_max_kinds_dropping_the_least_recent() -> None:
    book = KindBook(2, 600.0)
    book.record("a", 0, 2, failed=True, now=0.0)
    book.record("b", 0, 2, failed=True, now=1.0)
    book.record("a", 0, 2, failed=True, now=2.0)  # a is now the more recent
    book.record("c", 0, 2, failed=True, now=3.0)
    assert len(book) == 2
    assert counts(book, "b", 0, 3.0) == (0.0, 0.0)
    assert counts(book, "a", 0, 3.0)[0] > 1.9
    assert counts(book, "c", 0, 3.0) == (1.0, 1.0)


def test_a_carried_over_book_keeps_what_was_learned() -> None:
    old = KindBook(8, 600.0)
    old.record("k", 0, 2, failed=True, now=0.0)
    new = KindBook(8, 600.0)
    new.carry_over(old)
    assert counts(new, "k", 0, 600.0) == pytest.approx((0.5, 0.5))
    new.record("k", 0, 2, failed=True, now=600.0)
    assert counts(new, "k", 0, 600.0) == pytest.approx((1.5, 1.5))


def test_a_carried_over_book_keeps_its_own_bound_dropping_the_least_recent() -> None:
    old = KindBook(8, 600.0)
    for i, kind in enumerate("abcd"):
        old.record(kind, 0, 2, failed=True, now=float(i))
    new = KindBook(2, 600.0)
    new.carry_over(old)
    assert len(new) == 2
    assert [counts(new, kind, 0, 3.0)[0] > 0 for kind in "abcd"] == [False, False, True, True]


# start_tier


def test_a_kind_without_evidence_starts_at_the_first_tier() -> None:
    choice = start_tier([TierEvidence()] * 3, NAMES, params(), NEVER_EXPLORE)
    assert (choice.tier, choice.reason, choice.skipped) == (0, "first tier", 0)


def test_a_tier_this_kind_keeps_failing_is_skipped_with_its_evidence() -> None:
    choice = start_tier([DOOMED, FINE, FINE], NAMES, params(), NEVER_EXPLORE)
    assert (choice.tier, choice.skipped) == (1, 1)
    assert choice.reason == (
        "'cheap' skipped: this kind failed its checks there 9.0 of 10.0 times (90%)"
    )


@pytest.mark.parametrize(
    ("seen", "fields"),
    [
        pytest.param(TierEvidence(7.9, 7.9), {}, id="too-few-samples"),
        pytest.param(TierEvidence(10.0, 7.9), {}, id="rate-under-the-bar"),
        pytest.param(DOOMED, {"min_samples": 20}, id="min-samples-raised"),
        pytest.param(DOOMED, {"failure_rate": 0.95}, id="failure-rate-raised"),
    ],
)
def test_a_tier_is_not_skipped_without_enough_evidence(
    seen: TierEvidence, fields: dict[str, Any]
) -> None:
    choice = start_tier([seen, FINE, FINE], NAMES, params(**fields), NEVER_EXPLORE)
    assert (choice.tier, choice.skipped) == (0, 0)


def test_a_tier_at_exactly_the_bars_is_skipped() -> None:
    choice = start_tier([TierEvidence(8.0, 6.4), FINE], NAMES[:2], params(), NEVER_EXPLORE)
    assert choice.tier == 1


def test_every_failing_tier_below_is_skipped_and_named() -> None:
    choice = start_tier([DOOMED, TierEvidence(20.0, 20.0), FINE], NAMES, params(), NEVER_EXPLORE)
    assert (choice.tier, choice.skipped) == (2, 2)
    assert "'cheap' skipped" in choice.reason
    assert "'middle' skipped: this kind failed its checks there 20.0 of 20.0 times (100%)" in (
        choice.reason
    )


@pytest.mark.parametrize("tiers", [2, 3])
def test_the_last_tier_is_never_skipped(tiers: int) -> None:
    choice = start_tier([TierEvidence(50.0, 50.0)] * tiers, NAMES[-tiers:], params(), 0.99)
    assert choice.tier == tiers - 1
    assert choice.skipped == tiers - 1


def test_a_draw_under_explore_tries_the_skippable_tier_anyway() -> None:
    choice = start_tier([DOOMED, FINE, FINE], NAMES, params(explore=0.05), 0.01)
    assert (choice.tier, choice.skipped) == (0, 0)
    assert choice.reason.startswith("exploring 'cheap'")
    assert "9.0 of 10.0 times (90%)" in choice.reason


def test_a_draw_at_or_over_explore_skips() -> None:
    assert start_tier([DOOMED, FINE, FINE], NAMES, params(explore=0.05), 0.05).tier == 1
    assert start_tier([DOOMED, FINE, FINE], NAMES, params(explore=0.0), 0.0).tier == 1


def test_with_learning_off_every_request_starts_at_the_first_tier() -> None:
    choice = start_tier([DOOMED, DOOMED, FINE], NAMES, params(learned=False), NEVER_EXPLORE)
    assert (choice.tier, choice.reason, choice.skipped) == (0, "learned start off", 0)

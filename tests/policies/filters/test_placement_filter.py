"""placement-filter: a backend serves only when it carries every tag the request requires."""

from __future__ import annotations

import pytest

from policies.answers import Verdicts
from policies.builtins import BUILTINS
from policies.filters.placement_filter import PlacementFilter
from tests.policies.builders import backend, snapshot

FILTER = PlacementFilter("placement-filter", PlacementFilter.Params())


@pytest.mark.parametrize(
    ("tags", "required", "keep", "reason"),
    [
        ((), (), True, "no tags required"),
        (("eu", "local"), (), True, "no tags required"),
        (("eu", "local"), ("eu",), True, "tags ok: eu"),
        (
            ("local", "eu", "no-retention"),
            ("no-retention", "eu"),
            True,
            "tags ok: eu, no-retention",
        ),
        (("local",), ("eu",), False, "missing tags: eu"),
        ((), ("no-retention", "eu"), False, "missing tags: eu, no-retention"),
        (("eu",), ("eu", "no-retention"), False, "missing tags: no-retention"),
        # Tags are compared whole: `eu` is not `eu-west`.
        (("eu-west",), ("eu",), False, "missing tags: eu"),
    ],
    ids=[
        "nothing-asked-untagged",
        "nothing-asked-tagged",
        "one-held",
        "all-held-sorted",
        "one-missing",
        "untagged-both-missing",
        "one-of-two-missing",
        "whole-tags-only",
    ],
)
def test_verdict(tags: tuple[str, ...], required: tuple[str, ...], keep: bool, reason: str) -> None:
    b = backend("a", tags=tags)
    verdict = FILTER.filter(snapshot([b], required_tags=required), [b])["a"]
    assert (verdict.keep, verdict.reason) == (keep, reason)


def test_each_candidate_against_its_own_tags() -> None:
    fleet = [
        backend("gpu-eu", tags=("eu", "local", "no-retention")),
        backend("cloud-eu", tags=("eu",)),
        backend("cloud-us", tags=("us",)),
    ]
    answer = FILTER.filter(snapshot(fleet, required_tags=("eu", "no-retention")), fleet)
    assert isinstance(answer, Verdicts) and list(answer.keep) == [True, False, False]
    assert {name: v.reason for name, v in answer.items()} == {
        "gpu-eu": "tags ok: eu, no-retention",
        "cloud-eu": "missing tags: no-retention",
        "cloud-us": "missing tags: eu, no-retention",
    }


def test_registered_under_its_type_name_and_alias() -> None:
    assert BUILTINS["placement-filter"] is PlacementFilter
    assert BUILTINS["placement"] is PlacementFilter
    with pytest.raises(ValueError, match="Extra inputs"):
        PlacementFilter.Params(strict=True)  # type: ignore[call-arg]

"""Drops backends that lack a placement tag the request requires (`eu`, `no-retention`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import ClassVar

from policies.answers import Verdicts
from policies.base import PolicyParams, Role, Verdict
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@register_policy
class PlacementFilter:
    """Keeps a backend whose `tags` include every one of `request.required_tags`.

    A host may enforce the same requirement before the pipeline (Switchyard's gateway
    does, so that no profile can leave the allowed set); in a profile this filter then
    keeps everyone and says which required tags each candidate carries.
    """

    role: ClassVar[Role] = "filter"
    type_name: ClassVar[str] = "placement-filter"

    class Params(PolicyParams):
        pass

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        required = snapshot.request.required_tags
        if not required:
            return Verdicts(candidates, [True] * len(candidates), _nothing_required)
        missing = [required - b.tags for b in candidates]
        keep = [not lacks for lacks in missing]
        return Verdicts(candidates, keep, _reason, missing, [required] * len(candidates))


def missing_tags_reason(missing: Set[str]) -> str:
    """The reason a backend lacking `missing` is dropped: `missing tags: eu, no-retention`."""
    return f"missing tags: {', '.join(sorted(missing))}"


def _reason(missing: Set[str], required: Set[str]) -> str:
    if missing:
        return missing_tags_reason(missing)
    return f"tags ok: {', '.join(sorted(required))}"


def _nothing_required() -> str:
    return "no tags required"

"""Keeps the backends that serve the requested model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from policies.base import PolicyParams, Role, Verdict
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@register_policy
class ModelMatchFilter:
    """Drops backends whose `models` do not include `request.model`."""

    role: ClassVar[Role] = "filter"
    type_name: ClassVar[str] = "model-match-filter"

    class Params(PolicyParams):
        pass

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        model = snapshot.request.model
        serves = Verdict(True, f"serves {model}")
        lacks = Verdict(False, f"does not serve {model}")
        return {b.name: serves if model in b.models else lacks for b in candidates}

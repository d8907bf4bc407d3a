"""Keeps the backends that serve the model the request asks of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from policies.base import PolicyParams, Role, Verdict
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@register_policy
class ModelMatchFilter:
    """Drops backends whose `models` do not include the model asked of them: the route's
    `model`, or a member's own (`request.model_at`)."""

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
        request = snapshot.request
        if request.member_models:
            return {b.name: _verdict(b, request.model_at(b.name)) for b in candidates}
        model = request.model
        serves = Verdict(True, f"serves {model}")
        lacks = Verdict(False, f"does not serve {model}")
        return {b.name: serves if model in b.models else lacks for b in candidates}


def _verdict(backend: BackendView, model: str) -> Verdict:
    if model in backend.models:
        return Verdict(True, f"serves {model}")
    return Verdict(False, f"does not serve {model}")

"""Policies a user might write, loaded by dotted path in the registry and pipeline tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from policies import BackendView, Pick, PolicyParams, Ranked, Role, Score, Snapshot


class FixedScorer:
    """Scores each backend with a configured value, including out-of-contract ones."""

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "fixed-scorer"

    class Params(PolicyParams):
        values: dict[str, float] = {}

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        values = self.params.values
        return {
            b.name: Score(values[b.name], f"fixed {values[b.name]}")
            for b in candidates
            if b.name in values
        }


class ExplodingScorer:
    role: ClassVar[Role] = "scorer"

    class Params(PolicyParams):
        pass

    def __init__(self, name: str, params: Params) -> None:
        self.name = name

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        raise RuntimeError("scorer bug")


class RoguePicker:
    """Claims to be a picker but returns a backend that was filtered out."""

    role: ClassVar[Role] = "picker"

    class Params(PolicyParams):
        name: str = "ghost"

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def pick(self, snapshot: Snapshot, ranked: Sequence[Ranked]) -> Pick:
        return Pick((self.params.name,), "made up")


class NoRole:
    class Params(PolicyParams):
        pass


class ScorerWithoutScore:
    role: ClassVar[Role] = "scorer"

    class Params(PolicyParams):
        pass


class ScorerWithoutParams:
    role: ClassVar[Role] = "scorer"

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        return {}


NOT_A_CLASS = 42

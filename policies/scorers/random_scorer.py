"""Gives every candidate an independent uniform score derived from the request seed."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import ClassVar

from policies.base import PolicyParams, Role, Score
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot

_SCALE = 1.0 / float(1 << 64)


@register_policy
class RandomScorer:
    """Uniform scores in [0, 1) from `rng_seed`, the plugin's name and the backend's name.

    Hashing each (seed, plugin, backend) triple rather than drawing from one
    `random.Random` keeps a backend's score independent of which other candidates
    survived, makes two random scorers disagree, and costs a fraction of seeding a
    Mersenne Twister per request.
    """

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "random-scorer"

    class Params(PolicyParams):
        pass

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        prefix = f"{snapshot.request.rng_seed}\0{self.name}\0".encode()
        scores: dict[str, Score] = {}
        for b in candidates:
            value = _uniform(prefix + b.name.encode())
            scores[b.name] = Score(value, f"random draw {value:.2f}")
        return scores


def _uniform(key: bytes) -> float:
    digest = hashlib.blake2b(key, digest_size=8).digest()
    return int.from_bytes(digest, "big") * _SCALE

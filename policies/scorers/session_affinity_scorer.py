"""Keeps a session on the same backend with rendezvous (highest-random-weight) hashing."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import ClassVar

from pydantic import Field

from policies.base import PolicyParams, Role, Score
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot

_NO_KEY_VALUE = 0.5


@register_policy
class SessionAffinityScorer:
    """Ranks candidates by `blake2b(session_key, backend)`; rank r scores `decay ** r`.

    Rendezvous hashing moves only the sessions of a backend that leaves (about 1/n of
    them), and each of those lands on its next-ranked backend, which is why every
    candidate gets a graded score rather than 1-or-0.
    """

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "session-affinity-scorer"

    class Params(PolicyParams):
        decay: float = Field(0.5, gt=0, lt=1)
        """Score ratio between consecutive ranks."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        key = snapshot.request.session_key
        if not key:
            none = Score(_NO_KEY_VALUE, "no session key")
            return {b.name: none for b in candidates}
        prefix = key.encode() + b"\0"
        ranked = sorted(candidates, key=lambda b: _weight(prefix, b.name), reverse=True)
        shown, n, decay = redact(key), len(ranked), self.params.decay
        scores = {ranked[0].name: Score(1.0, f"session {shown} pinned here (rank 1 of {n})")}
        for rank in range(1, n):
            scores[ranked[rank].name] = Score(
                decay**rank, f"session {shown} rank {rank + 1} of {n}"
            )
        return scores


def _weight(prefix: bytes, backend: str) -> int:
    digest = hashlib.blake2b(prefix + backend.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def redact(key: str) -> str:
    """Enough of a session key to correlate in logs, too little to leak a user id."""
    return key[: 4 if len(key) > 8 else 2] + "…"

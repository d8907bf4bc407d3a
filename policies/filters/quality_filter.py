"""Keeps traffic off backends whose live quality got them ejected, within limits."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import ClassVar

from pydantic import Field

from policies.answers import Verdicts
from policies.base import PolicyParams, Role, Verdict
from policies.register import register_policy
from policies.snapshot import BackendView, QualityView, Snapshot


# No `quality` alias: it has always named quality-scorer.
@register_policy(alias=False)
class QualityFilter:
    """Drops candidates the quality book has ejected for the request's model.

    Three limits keep one bad signal from emptying a route, as Envoy's outlier detection
    does: at most `max_ejected_share` of the candidates are dropped (the best-scoring
    ejected ones are kept beyond that); when every candidate is ejected all are kept
    (panic); and an ejected backend still gets `explore_share` of requests, chosen by the
    request's seed, so that fresh evidence can bring it back.
    """

    role: ClassVar[Role] = "filter"
    type_name: ClassVar[str] = "quality-filter"

    class Params(PolicyParams):
        max_ejected_share: float = Field(0.5, ge=0, le=1)
        """At most this share of the candidates is dropped (rounded down)."""
        explore_share: float = Field(0.02, ge=0, le=1)
        """Share of requests for which an ejected backend is kept anyway."""
        demoted_below: float | None = Field(None, gt=0, le=1)
        """Also drop candidates whose fidelity is below this, ejected or not."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        get = snapshot.quality.get
        column = [get(b.name) for b in candidates]
        bad = [
            b.name
            for b, view in zip(candidates, column, strict=True)
            if view is not None and self._bad(view)
        ]
        if not bad:
            return Verdicts(candidates, [True] * len(candidates), _kept_text, column)
        views = dict(zip((b.name for b in candidates), column, strict=True))
        if len(bad) == len(candidates):
            panic = Verdict(True, f"panic: all {len(bad)} candidates ejected, keeping all")
            return {name: panic for name in views}
        cap = math.floor(self.params.max_ejected_share * len(candidates))
        # The worst go first; beyond the cap the better ones are kept.
        bad.sort(key=lambda name: _fidelity(views[name]))
        verdicts = {name: _kept(view) for name, view in views.items()}
        for rank, name in enumerate(bad):
            view = views[name]
            assert view is not None
            if rank >= cap:
                verdicts[name] = Verdict(True, f"{_bad_text(view)}; kept: share cap {cap}")
            elif self._explores(snapshot, name):
                verdicts[name] = Verdict(True, f"{_bad_text(view)}; kept to explore")
            else:
                verdicts[name] = Verdict(False, _bad_text(view))
        return verdicts

    def _bad(self, view: QualityView) -> bool:
        threshold = self.params.demoted_below
        return view.state == "ejected" or (threshold is not None and view.fidelity < threshold)

    def _explores(self, snapshot: Snapshot, name: str) -> bool:
        return seeded_share(snapshot.request.rng_seed, name, self.params.explore_share)


def seeded_share(seed: int, name: str, share: float) -> bool:
    """True for `share` of requests per backend, drawn from the request's seed: each request
    stays reproducible, and backends are drawn independently."""
    if share <= 0:
        return False
    key = f"{seed}:{name}".encode()
    draw = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
    return draw / 2**64 < share


def _fidelity(view: QualityView | None) -> float:
    return view.fidelity if view is not None else 1.0


def _kept(view: QualityView | None) -> Verdict:
    return Verdict(True, partial(_kept_text, view))


def _kept_text(view: QualityView | None) -> str:
    if view is None:
        return "quality not tracked"
    return f"quality {view.state}, fidelity {view.fidelity:.2f}"


def _bad_text(view: QualityView) -> str:
    if view.state == "ejected":
        return f"ejected for {view.ejected_for_s:.0f}s more: {view.reason}"
    return f"fidelity {view.fidelity:.2f}: {view.reason}"

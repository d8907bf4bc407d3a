"""Whether a request can go now, and where: the first backend in its decision's order
that has room for it. Room is the saturation detector's (when flow control holds every
request) and, for a request with a TTFT target, a predicted TTFT within what is left of
it: the latency model's (`policies.predict`) plus what it has lately missed on that
backend (`BackendView.ttft_error_ms`). Pure functions of a decided `Leg`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.fleet.saturation import saturation
from policies.predict import predicted_ttft_ms, prefill_ms, uncached_tokens

if TYPE_CHECKING:
    from gateway.fleet.saturation import SaturationConfig
    from gateway.routing.router import Leg
    from policies.snapshot import BackendView, Snapshot


@dataclass(frozen=True, slots=True)
class Room:
    """Where the request may go now (`backend`), or why nowhere (`backend` None)."""

    backend: str | None
    why: str


@dataclass(frozen=True, slots=True)
class Allowance:
    """How much of a backend a request may fill: `share` of the saturation detector's KV
    and prefill limits (its class's `headroom`, less while its tenant is over its share),
    and, with a TPOT target, no backend decoding slower than `tpot_ms` (the target times
    its class's `headroom`: one more prefill there would only slow every stream it runs)."""

    share: float = 1.0
    tpot_ms: float | None = None


def find_room(
    leg: Leg,
    *,
    target_ms: float | None,
    elapsed_ms: float,
    saturated: SaturationConfig | None,
    chosen_only: bool = False,
    allowance: Allowance = Allowance(),
) -> Room:
    """The first backend of `leg`'s order with room; `saturated` None: no load bound;
    `chosen_only`: only the decision's choice will do (the request waits for it)."""
    snapshot = leg.snapshot
    if snapshot is None:  # a leg decided without a snapshot has nothing to predict from
        return Room(leg.decision.chosen, "no prediction")
    misses: list[str] = []
    order = leg.decision.order[:1] if chosen_only else leg.decision.order
    for name in order:
        view = snapshot.backends[name]
        full = blocked(view, saturated, allowance)
        if full is not None:
            misses.append(f"{name}: {full}")
            continue
        if target_ms is None:
            return Room(name, f"{name} has room")
        predicted = max(0.0, predicted_ttft_ms(snapshot, view) + view.ttft_error_ms)
        if elapsed_ms + predicted <= target_ms:
            return Room(name, _meets(name, predicted, elapsed_ms, target_ms))
        misses.append(f"{name}: predicted TTFT {predicted:,.0f} ms")
    return Room(None, "; ".join(misses) or "no candidate")


def blocked(
    view: BackendView, saturated: SaturationConfig | None, allowance: Allowance
) -> str | None:
    """Why `view` has no room for a request with `allowance`, or None."""
    full = saturation(view, saturated, allowance.share) if saturated is not None else None
    if full is None and allowance.tpot_ms is not None:
        full = _slow_decoding(view, allowance.tpot_ms)
    return full


def _slow_decoding(view: BackendView, tpot_limit_ms: float) -> str | None:
    # Only while it decodes: an idle backend's last TPOT says nothing of the next one,
    # and a learned TPOT that can only fall by serving would otherwise hold for ever.
    if view.decoding <= 0 or view.tpot_ms <= tpot_limit_ms:
        return None
    return f"decoding at {view.tpot_ms:,.1f} ms per token, over the {tpot_limit_ms:,.0f} ms target"


def _meets(name: str, predicted: float, elapsed_ms: float, target_ms: float) -> str:
    return (
        f"{name}: predicted TTFT {predicted:,.0f} ms after {elapsed_ms:,.0f} ms held, "
        f"within {target_ms:,.0f} ms"
    )


def service_ms(leg: Leg) -> float:
    """The least time to first token among the leg's candidates were they idle: its own
    uncached prefill and the fixed overhead. A request that has less left of its TTFT
    target than this cannot start in time anywhere on the route."""
    snapshot = leg.snapshot
    if snapshot is None or not leg.decision.order:
        return 0.0
    return min(_idle_ttft_ms(snapshot, snapshot.backends[n]) for n in leg.decision.order)


def best_ttft_ms(leg: Leg) -> float:
    """The predicted TTFT of the leg's chosen backend now, with what the prediction has
    lately missed there (a cloud's queueing and network time, until learned, is none of
    the latency model's); inf when it has none."""
    snapshot, chosen = leg.snapshot, leg.decision.chosen
    if chosen is None:
        return math.inf
    if snapshot is None:
        return 0.0
    view = snapshot.backends[chosen]
    return max(0.0, predicted_ttft_ms(snapshot, view) + view.ttft_error_ms)


def cached_on_room(
    cached: dict[str, int], views: dict[str, BackendView], roomy: frozenset[str]
) -> tuple[int, str | None]:
    """The most prompt tokens predicted cached on a backend with room, and which one."""
    best, where = 0, None
    for name in roomy:
        tokens = cached.get(name, 0)
        if tokens > best and name in views:
            best, where = tokens, name
    return best, where


def _idle_ttft_ms(snapshot: Snapshot, view: BackendView) -> float:
    return view.network_ms + prefill_ms(view, uncached_tokens(snapshot, view))

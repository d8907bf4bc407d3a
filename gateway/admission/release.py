"""The pump of the admission queues: one task, running while anything is held, that lets
requests go as backends gain room and deals with those whose time is up.

Each pass, per route: the backends with room now (healthy and, when flow control holds
every request, not saturated), the queue ranked by its order policies over what each
held request has cached on those backends, and the best-ranked few decided again until
one has a backend with room for it. A released request is resumed before the pump looks
at the fleet again (`asyncio.sleep(0)`): it takes its lease without suspending, so the
next look sees the load it added.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from gateway.admission.queue import Release
from gateway.admission.room import Allowance, blocked, cached_on_room, find_room
from gateway.fleet.saturation import saturation
from gateway.process.tasks import cancel_and_wait
from policies.order.snapshot import QueueSnapshot

if TYPE_CHECKING:
    from gateway.admission.controller import Admission
    from gateway.admission.queue import Held, RouteQueue
    from gateway.fleet.state import FleetState
    from policies.order.pipeline import QueueOrder, RankedWaiting
    from policies.snapshot import BackendView

logger = logging.getLogger("switchyard.admission")

_TRIES = 4
"""Best-ranked requests decided again per release before the pass gives up: one whose
placement or TTFT target no backend with room suits should not hold up the rest. One
whose class or tenant may fill less than every backend with room has left is passed over
without a try: an aged batch request ranked first must not hold up interactive ones."""
_RELEASES_PER_PASS = 256


class Releaser:
    """See the module docstring."""

    def __init__(self, admission: Admission, state: FleetState, order: QueueOrder) -> None:
        self._admission = admission
        self._state = state
        self._order = order
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.no_room: dict[str, str] = {}
        """Per route, why nothing was released on the last pass that released nothing."""
        state.on_change = self.changed

    def changed(self) -> None:
        """The fleet may have room: look again (only while the pump runs)."""
        if self._task is not None:
            self._changed.set()

    def wake(self) -> None:
        """Something was queued: start the pump if it is not running."""
        if self._closed:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="switchyard-admission")
        self._changed.set()

    async def close(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)

    async def _run(self) -> None:
        try:
            await self._pump()
        except Exception:  # a bug must not leave requests waiting for ever
            logger.exception("the admission queue's pump failed; refusing what it held")
            self._admission.refuse_all("flow control failed")
        finally:
            if self._task is asyncio.current_task():
                self._task = None

    async def _pump(self) -> None:
        recheck = self._admission.config.recheck_ms / 1000.0
        clock = self._admission.clock
        while True:
            self._changed.clear()
            for queue in self._admission.queues():
                self._expire(queue, clock())
                await self._release(queue)
            queues = self._admission.queues()
            if not queues:
                return
            soonest = min(q.next_leave_by() for q in queues) - clock()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), max(0.001, min(recheck, soonest)))

    def _expire(self, queue: RouteQueue, now: float) -> None:
        for held in [h for h in queue.held.values() if h.leave_by <= now]:
            why = self.no_room.get(queue.route, "no candidate had room")
            waited = now - held.arrived
            if held.target_ms is not None:
                reason = (
                    f"could not start in time for its TTFT target of {held.target_ms:,.0f} ms "
                    f"after {waited:.2f} s held ({why})"
                )
            else:
                reason = f"held {waited:.2f} s, the longest a request may be ({why})"
            queue.released(held, now, Release("late", reason, held.late_code))

    async def _release(self, queue: RouteQueue) -> None:
        for _ in range(_RELEASES_PER_PASS):
            if not len(queue) or not self._release_one(queue):
                return
            # The released request resumes and takes its lease before the next look.
            await asyncio.sleep(0)

    def _release_one(self, queue: RouteQueue) -> bool:
        now = self._admission.clock()
        route = next(iter(queue.held.values())).route
        views = self._state.views(route.backend_names)
        full = self._full(views)
        roomy = frozenset(name for name in views if name not in full)
        if not roomy:
            self.no_room[queue.route] = "; ".join(f"{n}: {why}" for n, why in full.items())
            return False
        tries = 0
        fits: dict[Allowance, bool] = {}
        for ranked in self._ranked(queue, views, roomy, now):
            held = queue.held[ranked.waiting.key]
            allowance = self._admission.allowance(held.standing, held.tpot_target_ms, now)
            if not self._fits(fits, allowance, views, roomy):
                continue  # no backend has room within its allowance: it holds up nobody
            if self._go(queue, held, ranked, allowance, now):
                return True
            tries += 1
            if tries >= _TRIES:
                break
        return False

    def _fits(
        self,
        fits: dict[Allowance, bool],
        allowance: Allowance,
        views: dict[str, BackendView],
        roomy: frozenset[str],
    ) -> bool:
        """Whether some backend with room has room within `allowance` (memoised for one
        look)."""
        known = fits.get(allowance)
        if known is None:
            limit = self._admission.saturation
            known = any(blocked(views[n], limit, allowance) is None for n in roomy)
            fits[allowance] = known
        return known

    def _go(
        self,
        queue: RouteQueue,
        held: Held,
        ranked: RankedWaiting,
        allowance: Allowance,
        now: float,
    ) -> bool:
        leg = held.plan.redecide()
        if not leg.decision.order:
            self.no_room[queue.route] = leg.empty_reason
            return False
        elapsed_ms = (now - held.arrived) * 1000.0
        room = find_room(
            leg,
            target_ms=held.target_ms,
            elapsed_ms=elapsed_ms,
            saturated=self._admission.saturation,
            chosen_only=not self._admission.may_spill(held, now),
            allowance=allowance,
        )
        if room.backend is None:
            self.no_room[queue.route] = room.why
            return False
        held.plan.first = leg.prefer(room.backend)
        queue.released(held, now, Release("go", f"{room.why}; order: {ranked.reason()}"))
        return True

    def _full(self, views: dict[str, BackendView]) -> dict[str, str]:
        """Why each backend without room for a request of the most generous class
        (`headroom` 1) has none: unhealthy, or saturated; with none left, no held request
        can go."""
        limit = self._admission.saturation
        full = {}
        for name, view in views.items():
            why = view.health_reason or "unhealthy" if not view.healthy else None
            if why is None and limit is not None:
                why = saturation(view, limit)
            if why is not None:
                full[name] = why
        return full

    def _ranked(
        self,
        queue: RouteQueue,
        views: dict[str, BackendView],
        roomy: frozenset[str],
        now: float,
    ) -> list[RankedWaiting]:
        held = list(queue.held.values())
        waiting = tuple(h.waiting(now, *cached_on_room(h.cached, views, roomy)) for h in held)
        service = self._admission.ledger.weighted((h.standing.tenant for h in held), now)
        return self._order.rank(QueueSnapshot(queue.route, now, waiting, service))

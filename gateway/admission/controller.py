"""Admission: a request goes at once while a candidate has room, and otherwise waits in
its route's queue until the queue lets it go (the order policies choose whom, the
router where), or until it can no longer start in time: then it moves to a fallback
route or is refused with 429 and Retry-After, before its deadline, never served late.

One `Admission` per gateway generation. Its pump (one task, running while anything is
held) looks at the queues whenever the fleet frees room (`FleetState.on_change`), and
every `recheck_ms` otherwise.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

from gateway.admission.classes import Classifier, Standing
from gateway.admission.ledger import ServiceLedger
from gateway.admission.queue import Held, Release, RouteQueue
from gateway.admission.release import Releaser
from gateway.admission.room import Allowance, best_ttft_ms, find_room, service_ms
from gateway.errors import RequestShed
from gateway.routing.decisions import FallbackLeg, HeldNote
from policies.order.pipeline import build_order

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from gateway.admission.config import FlowControlConfig, PriorityClass
    from gateway.config.root import RouteConfig
    from gateway.fleet.saturation import SaturationConfig
    from gateway.fleet.state import FleetState
    from gateway.routing.decisions import DecisionRecord
    from gateway.routing.router import Leg, RoutePlan
    from gateway.tenancy.caller import Caller

logger = logging.getLogger("switchyard.admission")

_SESSIONS = 100_000
"""Sessions remembered as live (served lately), for the order's follow-up turns."""
_SESSION_TTL_S = 600.0
_MARGIN_S = 0.05
"""Acted on this much before the last moment: the move itself takes time."""


class Admission:
    """See the module docstring."""

    def __init__(
        self,
        config: FlowControlConfig,
        state: FleetState,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.clock = clock
        self._classifier = Classifier(config)
        self.ledger = ServiceLedger(config.tenants)
        self._queues: dict[str, RouteQueue] = {}
        self._keys = itertools.count()
        self._sessions: OrderedDict[str, float] = OrderedDict()
        order = build_order(config.order, ageing_s=config.ageing_s, path="flow_control.order")
        self._releaser = Releaser(self, state, order)

    def standing(self, caller: Caller | None, headers: Mapping[str, str]) -> Standing:
        """The request's class and tenant; InvalidRequest for an unknown class."""
        return self._classifier.standing(caller, headers)

    def queue_depths(self) -> dict[tuple[str, str], int]:
        """Requests held per (route, class)."""
        depths: dict[tuple[str, str], int] = {}
        for queue in self._queues.values():
            for held in queue.held.values():
                key = (queue.route, held.standing.cls.name)
                depths[key] = depths.get(key, 0) + 1
        return depths

    def queues(self) -> list[RouteQueue]:
        return [q for q in self._queues.values() if len(q)]

    async def admit(
        self, route: RouteConfig, plan: RoutePlan, standing: Standing, record: DecisionRecord
    ) -> float | None:
        """Return when the request may be dispatched on `plan` (whose first leg may have
        been decided again, or be a fallback route's); RequestShed when it may not. What
        was done is `record.held`. Returns the moment (on `clock`) its first token must
        have come by, with `cut_at_deadline` and a TTFT target; else None."""
        cls, traits = standing.cls, plan.traits
        target = traits.ttft_slo_ms or route.sla.ttft_ms or cls.ttft_ms
        if not self.config.enabled and target is None:
            return None
        cut = self.clock() + target / 1000.0 if target and self.config.cut_at_deadline else None
        if not plan.first.decision.order:
            return cut  # nothing to wait for: the dispatcher says why no backend can serve
        await self._admit(route, plan, standing, record, target)
        return cut

    async def _admit(
        self,
        route: RouteConfig,
        plan: RoutePlan,
        standing: Standing,
        record: DecisionRecord,
        target: float | None,
    ) -> None:
        cls, traits = standing.cls, plan.traits
        targets = (target, traits.tpot_slo_ms or route.sla.tpot_ms)
        queue = self._queue(route)
        why = self._go_at_once(queue, plan, standing, record, targets)
        if why is None:
            return
        now, leg = self.clock(), plan.first
        leave_by, code = self._leave_by(plan, leg, cls, target, now)
        if cls.sheddable or leave_by <= now:
            late = why if leave_by > now else self._late_reason(leg, target, why)
            self._late(plan, record, standing, 0.0, Release("late", late, code), queue)
            return
        held = self._hold(queue, route, plan, standing, targets, now, leave_by, code)
        if held is None:
            release = Release("late", f"queue full ({queue.limit} held)", "queue_full")
            self._late(plan, record, standing, 0.0, release, queue)
            return
        await self._wait(held, queue, record)

    def _go_at_once(
        self,
        queue: RouteQueue,
        plan: RoutePlan,
        standing: Standing,
        record: DecisionRecord,
        targets: tuple[float | None, float | None],
    ) -> str | None:
        """Send the request on at once if a backend has room (None), else say why not.
        With deadlines only no order is owed to those held: a request that can meet its
        target now goes, whoever waits for a target nothing meets yet."""
        if len(queue) and self.config.enabled:
            return f"{len(queue)} held ahead on route {queue.route}"
        leg = plan.first
        room = find_room(
            leg,
            target_ms=targets[0],
            elapsed_ms=0.0,
            saturated=self.saturation,
            chosen_only=self.config.enabled,
            allowance=self.allowance(standing, targets[1], self.clock()),
        )
        if room.backend is None:
            return room.why
        plan.first = leg.prefer(room.backend)
        self._went(standing, record, plan.first, "immediate", 0.0, room.why)
        return None

    async def _wait(self, held: Held, queue: RouteQueue, record: DecisionRecord) -> None:
        self._releaser.wake()
        try:
            release = await held.future
        except asyncio.CancelledError:
            queue.remove(held)
            raise
        waited = (self.clock() - held.arrived) * 1000.0
        if release.how == "go":
            leg = held.plan.first
            record.redecided(leg.decision, leg.work, leg.placement)
            self._went(held.standing, record, leg, "queued", waited, release.reason)
            return
        self._late(held.plan, record, held.standing, waited, release, queue)

    def _hold(
        self,
        queue: RouteQueue,
        route: RouteConfig,
        plan: RoutePlan,
        standing: Standing,
        targets: tuple[float | None, float | None],
        now: float,
        leave_by: float,
        code: str,
    ) -> Held | None:
        """Put the request in `queue`, displacing a lower class from a full one; None when
        the queue is full of its own class or higher."""
        if queue.full:
            victim = queue.victim_for(standing.cls.band)
            if victim is None:
                return None
            why = f"displaced from a full queue by a request of class {standing.cls.name}"
            queue.released(victim, now, Release("late", why, "request_shed"))
        leg = plan.first
        session = plan.traits.session_key
        held = Held(
            key=next(self._keys),
            route=route,
            plan=plan,
            standing=standing,
            target_ms=targets[0],
            tpot_target_ms=targets[1],
            arrived=now,
            leave_by=leave_by,
            late_code=code,
            cached=dict(leg.work.cached_tokens),
            prompt_tokens=leg.work.prompt_tokens,
            follow_up=session is not None and self._live(session, now),
        )
        queue.add(held)
        return held

    def _leave_by(
        self, plan: RoutePlan, leg: Leg, cls: PriorityClass, target: float | None, now: float
    ) -> tuple[float, str]:
        """When a request arriving now must have left the queue, and the refusal's code
        if it has not: with a TTFT target, the last moment its fallback route (when it
        moves there) or the fastest idle candidate could still meet it; else after
        `max_wait_s`."""
        if target is None:
            return now + self.config.max_wait_s, "queue_timeout"
        fallback = plan.peek_fallback() if self._moves(cls, plan) else None
        if fallback is None:
            return now + (target - service_ms(leg)) / 1000.0 - _MARGIN_S, "deadline_unmeetable"
        slack = (target - best_ttft_ms(fallback)) / 1000.0 - _MARGIN_S
        return now + slack * self.config.fallback_patience, "deadline_unmeetable"

    def _late_reason(self, leg: Leg, target: float | None, why: str) -> str:
        if target is None:
            return why
        return (
            f"cannot start in time for its TTFT target of {target:,.0f} ms: the fastest "
            f"candidate needs ~{service_ms(leg):,.0f} ms idle ({why})"
        )

    def may_spill(self, held: Held, now: float) -> bool:
        """Whether a held request may go to another backend than its decision's choice:
        always without `enabled` (deadlines only, as `sla-filter` would), else once it
        has waited `spill_after_s` or half of what its TTFT target allowed it to wait."""
        if not self.config.enabled:
            return True
        waited = now - held.arrived
        if waited >= self.config.spill_after_s:
            return True
        return held.target_ms is not None and waited >= (held.leave_by - held.arrived) / 2

    def allowance(self, standing: Standing, tpot_target_ms: float | None, now: float) -> Allowance:
        """How much of a backend the request may fill: its class's `headroom` of the
        saturation limits and of its TPOT target; of the limits, times
        `tenants.over_share_headroom` while its tenant has had more than its share of the
        recent service and others want some (with `enabled` only)."""
        headroom = standing.cls.headroom
        share = headroom
        factor = self.config.tenants.over_share_headroom
        if factor < 1.0 and self.config.enabled and self.ledger.over_share(standing.tenant, now):
            share *= factor
        tpot_ms = tpot_target_ms * headroom if tpot_target_ms is not None else None
        return Allowance(share, tpot_ms)

    def _moves(self, cls: PriorityClass, plan: RoutePlan) -> bool:
        return cls.on_late == "fallback" and plan.has_fallback

    def _late(
        self,
        plan: RoutePlan,
        record: DecisionRecord,
        standing: Standing,
        waited_ms: float,
        release: Release,
        queue: RouteQueue,
    ) -> None:
        """Move the request to its fallback route, or refuse it (RequestShed)."""
        cls = standing.cls
        if self._moves(cls, plan):
            leg = plan.fallback()
            if leg is not None:
                record.left.append(f"flow control: {release.reason}")
                record.fallbacks.append(FallbackLeg(leg.decision, leg.work, leg.placement))
                plan.first = leg
                self._note(record, standing, "fallback", waited_ms, release.reason)
                return
        code = release.code or "request_shed"
        self._note(record, standing, code, waited_ms, release.reason)
        raise RequestShed(
            f"request of class {cls.name} refused by flow control: {release.reason}",
            code=code,
            retry_after_s=queue.retry_after_s(),
        )

    def _went(
        self,
        standing: Standing,
        record: DecisionRecord,
        leg: Leg,
        outcome: str,
        waited_ms: float,
        why: str,
    ) -> None:
        now = self.clock()
        self.ledger.charge(standing.tenant, leg.work.prompt_tokens, now)
        session = leg.snapshot.request.session_key if leg.snapshot is not None else None
        if session is not None:
            self._sessions[session] = now
            self._sessions.move_to_end(session)
            while len(self._sessions) > _SESSIONS:
                self._sessions.popitem(last=False)
        self._note(record, standing, outcome, waited_ms, why)

    def _note(
        self, record: DecisionRecord, standing: Standing, outcome: str, waited: float, why: str
    ) -> None:
        record.held = HeldNote(standing.cls.name, standing.tenant, outcome, waited, why)

    def _live(self, session: str, now: float) -> bool:
        seen = self._sessions.get(session)
        return seen is not None and now - seen <= _SESSION_TTL_S

    def _queue(self, route: RouteConfig) -> RouteQueue:
        queue = self._queues.get(route.name)
        if queue is None:
            queue = self._queues[route.name] = RouteQueue(route.name, self.config.max_waiting)
        return queue

    @property
    def saturation(self) -> SaturationConfig | None:
        """When a backend is full; None when only TTFT targets hold requests."""
        return self.config.saturation if self.config.enabled else None

    def charge_answer(self, tenant: str, completion_tokens: int) -> None:
        """An answer's output tokens count towards its tenant's service."""
        self.ledger.charge_answer(tenant, completion_tokens, self.clock())

    def share_charges(self, listener: Callable[[str, float], None] | None) -> None:
        """Tell `listener` each charge made here from now on, (tenant, tokens): the fleet
        sync's tenants channel, with Redis. None: tell no one."""
        self.ledger.on_charge = listener

    def add_peer_charge(self, tenant: str, tokens: float, age_s: float) -> None:
        """Another replica's charge, made `age_s` ago: counted as if charged here then."""
        now = self.clock()
        self.ledger.charge_at(tenant, tokens, now - age_s, now)

    async def close(self) -> None:
        """Stop the pump; what is still held is refused as the gateway stops."""
        await self._releaser.close()
        self.refuse_all("the gateway is stopping")

    def refuse_all(self, why: str) -> None:
        """Refuse every held request (429 `request_shed`, saying `why`)."""
        for queue in self._queues.values():
            for held in list(queue.held.values()):
                queue.released(held, self.clock(), Release("late", why, "request_shed"))

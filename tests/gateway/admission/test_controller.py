"""Admission on a real router and fleet state, in virtual time: who goes at once, who
waits, in what order, and who is moved or refused before its deadline."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from gateway.admission.classes import Standing
from gateway.admission.controller import Admission
from gateway.config.root import Config, parse_config
from gateway.errors import RequestShed
from gateway.fleet.state import FleetState
from gateway.routing.decisions import DecisionRecord
from gateway.routing.router import RequestTraits, RoutePlan, Router
from policies.profiles import build_pipelines

PROMPT_WORDS = 2_000
"""About 2,000 prompt tokens: 0.2 s of prefill at the backends' 10,000 tokens/s."""


def config(flow: dict[str, Any] | None = None, *, fallback: bool = False) -> Config:
    cache = {"prefill_tokens_per_s": 10_000}
    backends = [
        {"name": n, "base_url": f"http://127.0.0.1:9/{n}", "models": ["m"], "cache": cache}
        for n in ("a", "b", "cloud")
    ]
    routes: list[dict[str, Any]] = [
        {"name": "default", "model": "m", "backends": ["a", "b"]},
        {"name": "spill", "model": "m", "backends": ["cloud"]},
    ]
    if fallback:
        routes[0]["fallbacks"] = ["spill"]
    plugins = [{"ref": "healthy-filter"}, {"ref": "least-load-scorer"}, {"ref": "max-score-picker"}]
    data: dict[str, Any] = {
        "backends": backends,
        "routes": routes,
        "profiles": [{"name": "balanced", "plugins": plugins}],
        "health": {"active_probes": False},
    }
    if flow is not None:
        data["flow_control"] = flow
    return parse_config(data)


async def settle() -> None:
    """Let the pump see a change and the request it releases resume (a few loop turns)."""
    for _ in range(20):
        await asyncio.sleep(0)


@dataclass
class Rig:
    config: Config
    state: FleetState
    router: Router
    admission: Admission

    def plan(self, *, ttft_ms: float | None = None, session: str | None = None) -> RoutePlan:
        content = "word " * PROMPT_WORDS
        traits = RequestTraits(
            endpoint="chat.completions",
            stream=True,
            messages=[{"role": "user", "content": content}],
            ttft_slo_ms=ttft_ms,
            session_key=session,
        )
        return self.router.plan(self.router.route("default"), traits)

    def standing(self, priority: str = "standard", tenant: str = "-") -> Standing:
        cls = self.config.flow_control.class_named(priority)
        assert cls is not None
        return Standing(cls, tenant)

    async def admit(self, plan: RoutePlan, standing: Standing | None = None) -> DecisionRecord:
        """Admit as the proxy does: once admitted, the chosen backend's lease is taken
        before anything awaits (here: its prompt's prefill queued on it)."""
        record = DecisionRecord(plan.first.decision, plan.first.work)
        await self.admission.admit(
            self.router.route("default"), plan, standing or self.standing(), record
        )
        chosen = plan.first.decision.chosen
        if chosen is not None:
            self.load(chosen, plan.first.work.prompt_tokens)
        return record

    def load(self, backend: str, tokens: int) -> None:
        """`tokens` of prefill queued on `backend`, as a dispatched request adds them."""
        self.state.acquire(backend, tokens)

    def free(self, backend: str, tokens: int) -> None:
        """The request `load` stood for finished: its prefill done, its slot free."""
        self.state.prefill_done(backend, tokens)
        self.state.release(backend)

    def start(self, coro: Any) -> asyncio.Task[Any]:
        return asyncio.create_task(coro)


@pytest.fixture
async def rig(virtual_time: None) -> AsyncIterator[Any]:
    made: list[Admission] = []

    def build(flow: dict[str, Any] | None = None, *, fallback: bool = False) -> Rig:
        cfg = config(flow, fallback=fallback)
        clock = asyncio.get_running_loop().time
        state = FleetState(cfg.backends, cfg.health, clock=clock)
        router = Router(cfg, state, build_pipelines(cfg.policies, cfg.profiles))
        admission = Admission(cfg.flow_control, state, clock=clock)
        made.append(admission)
        return Rig(cfg, state, router, admission)

    yield build
    for admission in made:
        await admission.close()


async def test_without_a_target_or_flow_control_nothing_is_held(rig: Any) -> None:
    r = rig()
    r.load("a", 500_000)
    r.load("b", 500_000)
    record = await r.admit(r.plan())
    assert record.held is None


async def test_a_request_that_can_meet_its_target_goes_at_once(rig: Any) -> None:
    r = rig()
    r.load("a", 50_000)  # 5 s of prefill queued on a; b is idle
    plan = r.plan(ttft_ms=1_000)
    record = await r.admit(plan)
    assert record.held is not None and record.held.outcome == "immediate"
    assert plan.first.decision.chosen == "b"
    assert "within 1,000 ms" in record.held.reason


async def test_a_held_request_goes_when_a_backend_frees_up(rig: Any) -> None:
    r = rig()
    r.load("a", 50_000)
    r.load("b", 50_000)
    loop = asyncio.get_running_loop()
    started = loop.time()
    plan = r.plan(ttft_ms=2_000)
    task = r.start(r.admit(plan))
    await asyncio.sleep(0.5)
    assert not task.done()
    r.free("b", 50_000)
    record = await task
    assert record.held is not None and record.held.outcome == "queued"
    assert plan.first.decision.chosen == "b"
    assert record.held.waited_ms == pytest.approx(500, abs=60)
    assert loop.time() - started < 2.0


async def test_a_request_that_cannot_start_in_time_is_refused_before_its_deadline(
    rig: Any,
) -> None:
    r = rig()
    r.load("a", 50_000)
    r.load("b", 50_000)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(RequestShed) as refused:
        await r.admit(r.plan(ttft_ms=1_000))
    assert refused.value.code == "deadline_unmeetable"
    assert refused.value.status == 429
    assert refused.value.retry_after_s is not None and refused.value.retry_after_s >= 1
    # It needs ~0.2 s of prefill on an idle engine: refused before 1 s - 0.2 s.
    assert loop.time() - started <= 0.8


async def test_a_prompt_longer_than_its_target_allows_is_refused_at_once(rig: Any) -> None:
    r = rig()
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(RequestShed) as refused:
        await r.admit(r.plan(ttft_ms=100))  # ~200 ms of prefill even idle
    assert loop.time() == started
    assert "cannot start in time" in refused.value.message


async def test_a_late_request_moves_to_the_fallback_route(rig: Any) -> None:
    r = rig(fallback=True)
    r.load("a", 50_000)
    r.load("b", 50_000)
    plan = r.plan(ttft_ms=1_000)
    record = await r.admit(plan)
    assert record.held is not None and record.held.outcome == "fallback"
    assert plan.first.route.name == "spill"
    assert record.left and record.left[0].startswith("flow control:")
    assert [leg.decision.route for leg in record.fallbacks] == ["spill"]


@pytest.mark.parametrize("patience", [1.0, 0.25])
async def test_a_held_request_moves_after_its_fallback_patience(rig: Any, patience: float) -> None:
    r = rig({"fallback_patience": patience}, fallback=True)
    r.load("a", 50_000)
    r.load("b", 50_000)
    loop = asyncio.get_running_loop()
    started = loop.time()
    record = await r.admit(r.plan(ttft_ms=1_000))
    assert record.held is not None and record.held.outcome == "fallback"
    # The cloud needs ~0.2 s of prefill: up to ~0.8 s of the target may go on waiting.
    waited = loop.time() - started
    assert waited == pytest.approx(0.75 * patience, abs=0.06)


async def test_a_class_that_sheds_is_refused_even_with_a_fallback(rig: Any) -> None:
    r = rig(fallback=True)
    r.load("a", 50_000)
    r.load("b", 50_000)
    with pytest.raises(RequestShed):
        await r.admit(r.plan(ttft_ms=1_000), r.standing("sheddable"))


SATURATED = {"enabled": True, "saturation": {"max_queued_prefill_ms": 100}}
"""A backend is full with one request's prefill (~200 ms) queued on it."""


async def test_flow_control_holds_requests_without_targets_while_everything_is_full(
    rig: Any,
) -> None:
    r = rig(SATURATED)
    r.load("a", 50_000)
    r.load("b", 50_000)
    task = r.start(r.admit(r.plan()))
    await asyncio.sleep(1)
    assert not task.done()
    assert r.admission.queue_depths() == {("default", "standard"): 1}
    r.free("a", 50_000)
    record = await task
    assert record.held is not None and record.held.outcome == "queued"
    assert "a has room" in record.held.reason


async def test_a_higher_band_goes_first_and_a_lower_one_is_not_starved(rig: Any) -> None:
    r = rig({**SATURATED, "ageing_s": 5})
    r.load("a", 50_000)
    r.load("b", 50_000)
    batch = r.start(r.admit(r.plan(), r.standing("batch")))
    await asyncio.sleep(0.1)
    interactive = r.start(r.admit(r.plan(), r.standing("interactive")))
    await asyncio.sleep(0.1)
    r.free("a", 50_000)
    await settle()
    # a took the interactive request (and its prefill): full again.
    assert interactive.done() and not batch.done()
    # Ageing: held 5 s per band, batch (band 2) reaches band 0 after 10 s.
    r.load("a", 0)
    await asyncio.sleep(9.5)
    late = r.start(r.admit(r.plan(), r.standing("interactive")))
    await asyncio.sleep(1)
    r.free("b", 50_000)
    await settle()
    assert batch.done() and not late.done()
    record = batch.result()
    assert "lifted from 2" in record.held.reason
    late.cancel()


async def test_the_least_served_tenant_goes_first(rig: Any) -> None:
    r = rig(SATURATED)
    r.admission.ledger.charge("heavy", 1_000_000, asyncio.get_running_loop().time())
    r.load("a", 50_000)
    r.load("b", 50_000)
    heavy = r.start(r.admit(r.plan(), r.standing(tenant="heavy")))
    await asyncio.sleep(0.1)
    light = r.start(r.admit(r.plan(), r.standing(tenant="light")))
    await asyncio.sleep(0.1)
    r.free("a", 50_000)
    await settle()
    assert light.done() and not heavy.done()
    assert "tenant light" in light.result().held.reason
    heavy.cancel()


async def test_a_full_queue_displaces_a_lower_class_then_refuses(rig: Any) -> None:
    r = rig({**SATURATED, "max_waiting": 1})
    r.load("a", 50_000)
    r.load("b", 50_000)
    batch = r.start(r.admit(r.plan(), r.standing("batch")))
    await asyncio.sleep(0.1)
    first = r.start(r.admit(r.plan(), r.standing("interactive")))
    await asyncio.sleep(0.1)
    with pytest.raises(RequestShed) as displaced:
        await batch
    assert displaced.value.code == "request_shed"
    with pytest.raises(RequestShed) as full:
        await r.admit(r.plan(), r.standing("interactive"))
    assert full.value.code == "queue_full"
    first.cancel()


async def test_a_request_without_target_waits_at_most_max_wait(rig: Any) -> None:
    r = rig({**SATURATED, "max_wait_s": 3})
    r.load("a", 50_000)
    r.load("b", 50_000)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(RequestShed) as refused:
        await r.admit(r.plan())
    assert refused.value.code == "queue_timeout"
    assert loop.time() - started == pytest.approx(3, abs=0.1)


async def test_a_client_that_leaves_is_taken_out_of_the_queue(rig: Any) -> None:
    r = rig(SATURATED)
    r.load("a", 50_000)
    r.load("b", 50_000)
    task = r.start(r.admit(r.plan()))
    await asyncio.sleep(0.1)
    assert r.admission.queue_depths()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert r.admission.queue_depths() == {}


async def test_one_free_slot_releases_one_request(rig: Any) -> None:
    r = rig({"enabled": True, "saturation": {"max_queued_prefill_ms": 100}})
    r.load("a", 50_000)
    r.load("b", 50_000)
    tasks = [r.start(r.admit(r.plan())) for _ in range(3)]
    await asyncio.sleep(0.1)
    r.free("a", 50_000)
    await settle()
    assert sum(task.done() for task in tasks) == 1
    for task in tasks:
        task.cancel()


async def test_a_held_request_waits_for_its_choice_then_spills(rig: Any) -> None:
    r = rig({**SATURATED, "spill_after_s": 2})
    r.load("a", 50_000)  # a: one request, full of prefill
    for _ in range(2):
        r.load("b", 0)  # b: two requests, none queued: room, but more in flight
    loop = asyncio.get_running_loop()
    started = loop.time()
    plan = r.plan()
    assert plan.first.decision.chosen == "a"  # least-load prefers it
    record = await r.admit(plan)
    assert plan.first.decision.chosen == "b"
    assert loop.time() - started == pytest.approx(2, abs=0.1)
    assert record.held is not None and record.held.outcome == "queued"


async def test_what_the_prediction_missed_lately_counts_against_a_target(rig: Any) -> None:
    r = rig()
    # b's prediction (~0.2 s idle) has been 900 ms short lately; a is loaded.
    for _ in range(30):
        r.state.estimates("b").observe_ttft_error(1_100.0, 200.0)
    r.load("a", 50_000)
    with pytest.raises(RequestShed):
        await r.admit(r.plan(ttft_ms=1_000))
    r.state.estimates("b").ttft_error_ms = 0.0  # b's view is rebuilt: its estimates moved
    record = await r.admit(r.plan(ttft_ms=1_000))
    assert record.held is not None and record.held.outcome == "immediate"


async def test_with_deadlines_only_a_request_that_fits_passes_those_held(rig: Any) -> None:
    r = rig()
    r.load("a", 50_000)
    r.load("b", 5_000)  # b: 0.5 s of prefill queued
    waiting = r.start(r.admit(r.plan(ttft_ms=600)))  # ~0.7 s on b: held
    await asyncio.sleep(0.05)
    assert not waiting.done()
    record = await r.admit(r.plan(ttft_ms=900))  # fits on b now
    assert record.held is not None and record.held.outcome == "immediate"
    waiting.cancel()


async def test_a_backend_decoding_slower_than_the_tpot_target_has_no_room(rig: Any) -> None:
    r = rig()
    r.load("a", 50_000)
    r.state.decode_started("b")  # b decodes one stream, lately at 80 ms per token
    for _ in range(30):
        r.state.estimates("b").observe_tpot(decode_s=7.9, completion_tokens=100)
    plan = r.plan(ttft_ms=1_000)
    plan = replace_traits(r, plan, tpot_ms=50)
    with pytest.raises(RequestShed) as refused:
        await r.admit(plan)
    assert "over the 50 ms target" in refused.value.message
    # Once b stops decoding its last TPOT says nothing: it has room again.
    r.state.decode_ended("b")
    record = await r.admit(replace_traits(r, r.plan(ttft_ms=1_000), tpot_ms=50))
    assert record.held is not None and record.held.outcome == "immediate"


def replace_traits(r: Rig, plan: RoutePlan, **targets: float) -> RoutePlan:
    traits = dataclasses.replace(plan.traits, tpot_slo_ms=targets["tpot_ms"])
    return r.router.plan(r.router.route("default"), traits)


async def test_a_class_with_less_headroom_leaves_room_for_the_others(rig: Any) -> None:
    r = rig(SATURATED)  # full at 100 ms of queued prefill; batch's headroom 0.8: at 80 ms
    r.load("b", 50_000)
    r.load("b", 0)  # least-load prefers a
    r.load("a", 900)  # 90 ms queued on a
    batch = r.start(r.admit(r.plan(), r.standing("batch")))
    await settle()
    assert not batch.done()
    record = await r.admit(r.plan(), r.standing("interactive"))
    # Past the held batch request at once (the queue was not empty: the pump let it go).
    assert record.held is not None and record.held.outcome == "queued"
    assert record.held.waited_ms < 1 and not batch.done()
    batch.cancel()


async def test_a_tenant_over_its_share_leaves_room_for_one_under_it(rig: Any) -> None:
    # Full at 100 ms of queued prefill; a tenant over its share fills half of that.
    r = rig({**SATURATED, "tenants": {"over_share_headroom": 0.5}})
    now = asyncio.get_running_loop().time()
    r.admission.ledger.charge("loud", 100_000, now)
    r.admission.ledger.charge("quiet", 1_000, now)
    r.load("b", 50_000)
    r.load("b", 0)  # least-load prefers a
    r.load("a", 600)  # 60 ms queued on a: over half the limit, under all of it
    loud = r.start(r.admit(r.plan(), r.standing(tenant="loud")))
    await settle()
    assert not loud.done()
    record = await r.admit(r.plan(), r.standing(tenant="quiet"))
    assert record.held is not None and record.held.outcome == "queued"
    assert record.held.waited_ms < 1 and not loud.done()
    loud.cancel()


async def test_a_tenant_alone_may_fill_the_backends(rig: Any) -> None:
    r = rig({**SATURATED, "tenants": {"over_share_headroom": 0.5}})
    r.admission.ledger.charge("loud", 100_000, asyncio.get_running_loop().time())
    r.load("b", 50_000)
    r.load("b", 0)
    r.load("a", 600)
    record = await r.admit(r.plan(), r.standing(tenant="loud"))
    assert record.held is not None and record.held.outcome == "immediate"


async def test_requests_ranked_first_but_without_room_in_their_share_hold_up_nobody(
    rig: Any,
) -> None:
    r = rig({**SATURATED, "ageing_s": 1})  # batch may fill 80 ms of the 100 ms
    r.load("b", 50_000)
    r.load("b", 0)  # least-load prefers a
    r.load("a", 900)  # 90 ms queued on a
    batch = [r.start(r.admit(r.plan(), r.standing("batch"))) for _ in range(6)]
    await asyncio.sleep(5)  # aged past the interactive band: ranked first
    record = await r.admit(r.plan(), r.standing("interactive"))
    assert record.held is not None and record.held.outcome == "queued"
    assert record.held.waited_ms < 1
    assert not any(task.done() for task in batch)
    for task in batch:
        task.cancel()

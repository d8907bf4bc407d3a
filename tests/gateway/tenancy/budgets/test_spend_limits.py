"""Budgets checked against in-process spend: headers, refusal, fallback, rollover."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from gateway.errors import BudgetExhausted, ConfigError
from gateway.tenancy.budgets.ledger import Spend, SpendLedger
from gateway.tenancy.budgets.spend_limits import Budgets
from gateway.tenancy.caller import Caller
from gateway.tenancy.config import BudgetsConfig
from tests.conftest import eventually, make_config, parsed

NOON = datetime(2026, 12, 4, 12, 0, tzinfo=UTC).timestamp()
MIDNIGHT = datetime(2026, 12, 5, tzinfo=UTC).timestamp()
KEY = Caller("key_b1", "virtual", team="search", budget_usd_per_day=1.0)


class FakeClock:
    def __init__(self, now: float = NOON) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def budgets(clock: FakeClock, **config: Any) -> Budgets:
    settings = BudgetsConfig.model_validate(config)
    return Budgets(settings, SpendLedger(settings, clock=clock), clock=clock)


async def spend(book: Budgets, usd: float, *, key: str | None, route: str, at: float) -> None:
    book.ledger.record(Spend(key, "search", route, usd, at))
    await book.ledger.flush()


async def test_no_budget_no_headers_and_no_spend_read() -> None:
    book = budgets(FakeClock())
    check = await book.check(Caller("key_x", "virtual"), "default")
    assert check.standings == () and check.headers() == {}


async def test_headers_show_the_tightest_budget_and_when_it_resets() -> None:
    clock = FakeClock()
    book = budgets(clock, routes={"default": {"usd_per_month": 100.0}})
    await spend(book, 0.25, key="key_b1", route="default", at=NOON)
    headers = (await book.check(KEY, "default")).headers()
    assert headers == {
        "x-switchyard-budget-limit-usd": "1",
        "x-switchyard-budget-remaining-usd": "0.75",
        "x-switchyard-budget-reset": "2026-12-05T00:00:00Z",
        "x-switchyard-budget-scope": "key day",
    }


async def test_a_spent_key_budget_is_refused_until_the_day_ends() -> None:
    clock = FakeClock()
    book = budgets(clock)
    await spend(book, 0.6, key="key_b1", route="default", at=NOON)
    assert not (await book.check(KEY, "default")).exhausted
    await spend(book, 0.5, key="key_b1", route="default", at=NOON + 1)
    check = await book.check(KEY, "default")
    with pytest.raises(BudgetExhausted) as refused:
        await book.reroute(check, KEY, ["cheap"])
    error = refused.value
    assert (error.status, error.type, error.code) == (429, "insufficient_quota", "budget_exceeded")
    assert error.retry_after_s == MIDNIGHT - NOON
    assert "key key_b1" in error.message and "this day (UTC)" in error.message
    assert "2026-12-05T00:00:00Z (in 12h0m)" in error.message
    assert error.headers["x-switchyard-budget-remaining-usd"] == "0"
    clock.now = MIDNIGHT + 1  # a new day: a new counter, nothing spent in it
    assert not (await book.check(KEY, "default")).exhausted


async def test_spend_counts_in_the_window_the_request_finished_in() -> None:
    clock = FakeClock(MIDNIGHT + 10)
    book = budgets(clock)
    await spend(book, 5.0, key="key_b1", route="default", at=MIDNIGHT - 1)
    assert not (await book.check(KEY, "default")).exhausted  # yesterday's


async def test_a_month_budget_spans_days() -> None:
    clock = FakeClock()
    key = Caller("key_m", "virtual", budget_usd_per_month=2.0)
    book = budgets(clock)
    await spend(book, 1.5, key="key_m", route="default", at=NOON - 86_400)
    await spend(book, 0.6, key="key_m", route="default", at=NOON)
    check = await book.check(key, "default")
    assert [s.limit.period for s in check.exhausted] == ["month"]
    with pytest.raises(BudgetExhausted) as refused:
        await book.reroute(check, key, [])
    assert refused.value.retry_after_s == datetime(2027, 1, 1, tzinfo=UTC).timestamp() - NOON


ROUTES: dict[str, dict[str, Any]] = {
    "premium": {"usd_per_day": 1.0, "on_exhausted": "fallback"},
    "mid": {"usd_per_day": 1.0},
}


async def test_a_spent_route_falls_back_to_the_first_route_whose_budget_holds() -> None:
    book = budgets(FakeClock(), routes=ROUTES)
    await spend(book, 1.0, key=None, route="premium", at=NOON)
    await spend(book, 1.0, key=None, route="mid", at=NOON)
    check = await book.check(None, "premium")
    taken = await book.reroute(check, None, ["mid", "cheap"])
    assert taken.route == "cheap" and not taken.exhausted
    assert book.rerouted == 1


async def test_fallback_skips_routes_the_key_may_not_use_and_names_a_configured_route() -> None:
    routes = {**ROUTES, "premium": {**ROUTES["premium"], "fallback_route": "local"}}
    book = budgets(FakeClock(), routes=routes)
    await spend(book, 1.0, key=None, route="premium", at=NOON)
    check = await book.check(None, "premium")
    assert (await book.reroute(check, None, ["mid"])).route == "local"
    narrow = Caller("key_n", "virtual", routes=frozenset({"premium", "mid"}))
    with pytest.raises(BudgetExhausted):
        await book.reroute(await book.check(narrow, "premium"), narrow, ["mid"])


async def test_a_key_set_to_fallback_goes_to_the_keys_fallback_route() -> None:
    key = Caller("key_f", "virtual", budget_usd_per_day=0.5, budget_on_exhausted="fallback")
    book = budgets(FakeClock(), keys={"fallback_route": "cheap"})
    await spend(book, 0.5, key="key_f", route="default", at=NOON)
    taken = await book.reroute(await book.check(key, "default"), key, ["other"])
    # Still over its own budget there: the headers say so, the request goes on.
    assert taken.route == "cheap"
    assert taken.headers()["x-switchyard-budget-remaining-usd"] == "0"


async def test_reject_wins_when_two_spent_budgets_disagree() -> None:
    book = budgets(FakeClock(), routes=ROUTES)
    await spend(book, 1.0, key="key_b1", route="premium", at=NOON)
    with pytest.raises(BudgetExhausted):
        await book.reroute(await book.check(KEY, "premium"), KEY, ["cheap"])


async def test_the_queue_is_bounded_and_windows_that_ended_are_forgotten() -> None:
    clock = FakeClock()
    book = budgets(clock, queue_size=2)
    for _ in range(3):
        book.ledger.record(Spend("key_b1", None, "default", 0.1, NOON))
    assert book.ledger.dropped == 1
    await book.ledger.flush()
    assert book.ledger.status()["queued"] == 0
    clock.now = MIDNIGHT + 1
    await book.ledger.flush()
    report = await book.key_spend([("key_b1", 1.0, None)])
    assert report["key_b1"]["day"] == {
        "spent_usd": 0.0,
        "limit_usd": 1.0,
        "resets": "2026-12-06T00:00:00Z",
    }
    assert report["key_b1"]["month"]["spent_usd"] == pytest.approx(0.2)


async def _drained(ledger: SpendLedger) -> bool:
    return ledger.status()["queued"] == 0


class CountingLedger(SpendLedger):
    """Counts the accounting task's turns."""

    turns = 0

    async def flush(self) -> list[Spend]:
        self.turns += 1
        return await super().flush()


async def test_in_process_accounting_sleeps_until_spend_is_queued_from_another_thread() -> None:
    clock = FakeClock()
    settings = BudgetsConfig.model_validate({"flush_ms": 5})
    ledger = CountingLedger(settings, clock=clock)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:  # a flush period takes a loop turn
        slept.append(seconds)
        await asyncio.sleep(0)

    book = Budgets(settings, ledger, clock=clock, sleep=sleep)
    task = asyncio.create_task(book.run())
    try:
        for _ in range(20):  # 20 flush periods' worth of turns with nothing queued: no turn
            await asyncio.sleep(0)
        assert (ledger.turns, slept) == (0, [])
        for _ in range(2):  # a spend from the telemetry thread wakes the task, each time
            thread = threading.Thread(
                target=ledger.record, args=(Spend("key_b1", None, "default", 0.25, NOON),)
            )
            thread.start()
            thread.join()
            await eventually(lambda: _drained(ledger), "the spend counted")
        report = await book.key_spend([("key_b1", 1.0, None)])
        assert report["key_b1"]["day"]["spent_usd"] == pytest.approx(0.5)
        assert 1 <= ledger.turns <= 2
        assert slept == [0.005] * ledger.turns  # each turn counts what flush_ms gathered
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_spend_queued_before_the_task_starts_is_counted() -> None:
    clock = FakeClock()
    settings = BudgetsConfig.model_validate({"flush_ms": 5})
    book = Budgets(settings, SpendLedger(settings, clock=clock), clock=clock)
    book.ledger.record(Spend("key_b1", None, "default", 0.5, NOON))
    task = asyncio.create_task(book.run())
    try:
        await eventually(lambda: _drained(book.ledger), "the spend counted")
        report = await book.key_spend([("key_b1", 1.0, None)])
        assert report["key_b1"]["day"]["spent_usd"] == pytest.approx(0.5)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.parametrize(
    ("budgets_section", "problem"),
    [
        ({"routes": {"nope": {"usd_per_day": 1}}}, "budgets.routes.nope: unknown route"),
        ({"routes": {"default": {}}}, "budgets.routes.default: set usd_per_day"),
        (
            {"routes": {"default": {"usd_per_day": 1, "on_exhausted": "fallback"}}},
            "budgets.routes.default.on_exhausted: fallback needs",
        ),
        (
            {"routes": {"default": {"usd_per_day": 1, "fallback_route": "x"}}},
            "budgets.routes.default.fallback_route: unknown route 'x'",
        ),
        ({"keys": {"fallback_route": "x"}}, "budgets.keys.fallback_route: unknown route 'x'"),
        ({"routes": {"default": {"usd_per_day": 0}}}, "budgets.routes.default.usd_per_day"),
    ],
)
def test_bad_budgets_are_config_errors_naming_the_path(
    budgets_section: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        parsed(make_config({"a": "http://127.0.0.1:9/v1"}, budgets=budgets_section))
    assert any(p.startswith(problem) for p in raised.value.problems), raised.value.problems

"""Every backend of a route cooling down at once (each answered 429 with Retry-After): a
request waits for the soonest when it comes back within the request's deadline and
`retry.max_retry_after_s`, else moves on to the route's fallback route, else gets a 429
with Retry-After. No engine is sent a request while it is cooling down."""

from __future__ import annotations

from typing import Any

from tests.conftest import StartEmulator, StartGateway
from tests.faults.rig import MODEL, POLICIES, PROFILE, ROUTE, Rig, attempts, chat, start_rig

BACKUP = "backup"


def with_backup(names: tuple[str, ...], backup: str) -> list[dict[str, Any]]:
    """Route `default` over `names`, falling back to route `backup` over `backup`."""
    return [
        {"name": ROUTE, "model": MODEL, "backends": list(names), "fallbacks": [BACKUP]},
        {"name": BACKUP, "model": MODEL, "backends": [backup]},
    ]


async def cool_everything(rig: Rig, retry_after_s: float) -> None:
    """One request that a and b both refuse with 429 and `retry_after_s`: both cool down.
    (c, the backup route's, serves it when the route has a fallback.)"""
    for name in ("a", "b"):
        rig.fault(name, fail_status=429, fail_count=1, retry_after_s=retry_after_s)
    await rig.client.post("/v1/chat/completions", json=chat())
    assert rig.received()["a"] == 1 and rig.received()["b"] == 1
    health = rig.health()
    assert not health["a"]["healthy"] and not health["b"]["healthy"]


async def test_waits_for_the_soonest_cool_down_within_the_deadline(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    rig = await start_rig(
        start_emulator, start_gateway, retry={"max_attempts": 2, "max_retry_after_s": 2.0}
    )
    await cool_everything(rig, retry_after_s=1.0)
    response = await rig.client.post("/v1/chat/completions", json=chat(stream=True))
    assert response.status_code == 200
    assert response.content.rstrip().endswith(b"data: [DONE]")
    # Nothing was sent while both cooled down; then the first back (a, tried first) served.
    assert rig.received() == {"a": 2, "b": 1}
    first, record = await rig.records(2)
    assert (first.status, first.error) == (429, "upstream_429"), "attempts ran out"
    assert attempts(record) == [("a", "ok")]
    assert record.decision.cool_down_wait_ms > 0
    assert rig.cost_usd(record) > 0 and rig.health()["a"]["healthy"]


async def test_falls_back_when_the_cool_down_outlasts_the_wait(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    rig = await start_rig(
        start_emulator, start_gateway, ("a", "b", "c"), routes=with_backup(("a", "b"), "c")
    )
    await cool_everything(rig, retry_after_s=30)
    first = (await rig.records(1))[0]
    assert attempts(first) == [("a", "upstream_429"), ("b", "upstream_429"), ("c", "ok")]
    response = await rig.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 200 and response.headers["x-switchyard-backend"] == "c"
    assert rig.received() == {"a": 1, "b": 1, "c": 2}, "no request to a cooling backend"
    record = (await rig.records(2))[1]
    assert attempts(record) == [("c", "ok")]
    assert record.decision.left[0].startswith("every backend of route 'default' is cooling")
    assert rig.cost_usd(record) > 0


async def test_answers_429_with_retry_after_when_nothing_else_can_serve(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    rig = await start_rig(start_emulator, start_gateway)
    await cool_everything(rig, retry_after_s=30)
    for stream in (False, True):
        response = await rig.client.post("/v1/chat/completions", json=chat(stream=stream))
        assert response.status_code == 429
        assert 28 <= int(response.headers["retry-after"]) <= 30
        error = response.json()["error"]
        assert error["code"] == "backends_cooling_down" and "back in" in error["message"]
    assert rig.received() == {"a": 1, "b": 1}, "no request to a cooling backend"
    records = await rig.records(3)
    assert [(r.status, r.error, r.backend) for r in records[1:]] == [
        (429, "backends_cooling_down", None)
    ] * 2
    assert all(r.decision.attempts == [] and rig.cost_usd(r) == 0.0 for r in records[1:])


async def test_does_not_wait_past_the_request_deadline(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    rig = await start_rig(
        start_emulator,
        start_gateway,
        retry={"max_attempts": 2, "max_retry_after_s": 5.0},
        timeouts={"total_s": 0.5},
    )
    await cool_everything(rig, retry_after_s=3.0)
    response = await rig.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 429 and 1 <= int(response.headers["retry-after"]) <= 3
    assert response.json()["error"]["code"] == "backends_cooling_down"
    assert rig.received() == {"a": 1, "b": 1}


async def test_without_panic_mode_the_answer_is_429_with_retry_after_too(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    """`healthy-filter` without panic mode drops every cooling backend: the request gets
    the same 429 with Retry-After (no wait), not a 503 without one."""
    strict = {"type": "healthy-filter", "name": "strict", "params": {"panic_mode": False}}
    plugins = [{"ref": "strict"}, *PROFILE[1:]]
    rig = await start_rig(
        start_emulator,
        start_gateway,
        policies=[*POLICIES, strict],
        profiles=[{"name": "balanced", "plugins": plugins}],
    )
    await cool_everything(rig, retry_after_s=30)
    response = await rig.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 429 and 28 <= int(response.headers["retry-after"]) <= 30
    assert response.json()["error"]["code"] == "backends_cooling_down"
    assert rig.received() == {"a": 1, "b": 1}

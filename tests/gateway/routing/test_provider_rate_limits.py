"""Provider rate limits through the real app against emulated engines that enforce them:
a budget reported spent moves traffic away before the provider refuses, a 429 keeps the
backend out for its Retry-After, and a nearly spent budget counts as less capacity."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually, make_config
from tests.gateway.routing.test_dispatch import decision_of

CHAT: dict[str, Any] = {
    "model": "default",
    "messages": [{"role": "user", "content": "hello there"}],
    "max_tokens": 8,
}
CAPACITY_PROFILE = [
    {"ref": "healthy-filter"},
    {"ref": "capacity-filter"},
    {"ref": "max-score-picker"},
]


async def backend_row(gw: RunningGateway, name: str) -> dict[str, Any]:
    rows = (await gw.client.get("/v1/switchyard/backends")).json()["backends"]
    found: dict[str, Any] = next(row for row in rows if row["name"] == name)
    return found


async def all_attempts(gw: RunningGateway, responses: list[httpx.Response]) -> list[str]:
    outcomes = []
    for response in responses:
        outcomes += [a["outcome"] for a in (await decision_of(gw, response))["attempts"]]
    return outcomes


def report_of(decision: dict[str, Any], backend: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in decision["candidates"] if c["backend"] == backend)
    return found


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_a_spent_request_budget_moves_traffic_before_the_provider_refuses(
    start_emulator: StartEmulator, start_gateway: StartGateway, stream: bool
) -> None:
    limited = await start_emulator(rate_limit_requests_per_minute=2)
    spare = await start_emulator()
    gw = await start_gateway(
        make_config({"a-limited": limited.base_url, "b-spare": spare.base_url})
    )
    responses = [
        await gw.client.post("/v1/chat/completions", json={**CHAT, "stream": stream})
        for _ in range(6)
    ]
    assert [r.status_code for r in responses] == [200] * 6
    served = [r.headers["x-switchyard-backend"] for r in responses]
    # Round robin puts a-limited first on every other request until its second answer
    # reports its budget spent; from then on only the spare is asked.
    assert served == ["a-limited", "b-spare", "a-limited", "b-spare", "b-spare", "b-spare"]
    assert limited.runtime.stats.failed == 0, "a-limited never had to refuse"
    assert "upstream_429" not in await all_attempts(gw, responses)
    report = report_of(await decision_of(gw, responses[-2]), "a-limited")
    assert report["dropped_by"] == "healthy-filter"
    assert report["drop_reason"].startswith("provider budget spent: 0 requests left, resets in")
    row = await backend_row(gw, "a-limited")
    assert row["healthy"] is False and row["provider_remaining_requests"] == 0


async def test_a_429_keeps_the_backend_out_for_its_retry_after(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    refusing = await start_emulator(
        faults={"fail_status": 429, "fail_count": 1, "retry_after_s": 30}
    )
    spare = await start_emulator()
    gw = await start_gateway(
        make_config({"a-refusing": refusing.base_url, "b-spare": spare.base_url})
    )
    responses = [await gw.client.post("/v1/chat/completions", json=CHAT) for _ in range(4)]
    assert [r.headers["x-switchyard-backend"] for r in responses] == ["b-spare"] * 4
    attempts = (await decision_of(gw, responses[0]))["attempts"]
    assert [(a["backend"], a["outcome"]) for a in attempts] == [
        ("a-refusing", "upstream_429"),
        ("b-spare", "ok"),
    ]
    # Its fault is spent, but it was asked nothing more: it is out for 30 s.
    assert refusing.runtime.stats.received == 1
    row = await backend_row(gw, "a-refusing")
    assert row["healthy"] is False
    assert row["health_reason"].startswith("rate limited upstream: Retry-After 30.0 s; back in")


async def test_a_refusal_from_the_engines_token_budget_cools_it_down(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    # Each request costs its prompt and 120 output tokens: the second does not fit.
    limited = await start_emulator(rate_limit_tokens_per_minute=200)
    spare = await start_emulator()
    gw = await start_gateway(
        make_config({"a-limited": limited.base_url, "b-spare": spare.base_url})
    )
    body = {**CHAT, "max_tokens": 120}
    responses = [await gw.client.post("/v1/chat/completions", json=body) for _ in range(5)]
    assert [r.status_code for r in responses] == [200] * 5
    served = [r.headers["x-switchyard-backend"] for r in responses]
    assert served == ["a-limited"] + ["b-spare"] * 4
    assert (await all_attempts(gw, responses)).count("upstream_429") == 1
    assert limited.runtime.stats.received == 2, "after its 429 it was asked nothing more"
    row = await backend_row(gw, "a-limited")
    assert row["health_reason"].startswith("rate limited upstream: Retry-After ")


async def test_a_nearly_spent_budget_counts_as_less_capacity(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    limited = await start_emulator(rate_limit_requests_per_minute=2)
    spare = await start_emulator()
    config = make_config(
        {"a-limited": limited.base_url, "b-spare": spare.base_url}, profile=CAPACITY_PROFILE
    )
    config["routes"] = [
        {"name": "default", "model": "emulated-model", "backends": ["a-limited"]}
        | {"fallbacks": ["spare"]},
        {"name": "spare", "model": "emulated-model", "backends": ["b-spare"]},
    ]
    gw = await start_gateway(config)
    first = await gw.client.post("/v1/chat/completions", json=CHAT)
    assert first.headers["x-switchyard-backend"] == "a-limited"
    row = await backend_row(gw, "a-limited")
    assert (row["provider_remaining_requests"], row["effective_max_concurrency"]) == (1, 1)
    assert row["provider_limits_read_at"] is not None
    dashboard = (await gw.client.get("/v1/switchyard/dashboard")).json()
    [health] = [b["health"] for b in dashboard["backends"] if b["name"] == "a-limited"]
    assert health["provider_remaining_requests"] == 1

    # The last request its budget allows is held before its first byte; meanwhile the
    # gateway counts a-limited full and sends the next request to the fallback.
    limited.runtime.faults.stall_before_first_byte_s = 2.0
    held = asyncio.create_task(gw.client.post("/v1/chat/completions", json=CHAT))

    async def dispatched() -> bool:
        return gw.gateway.state.in_flight("a-limited") == 1

    await eventually(dispatched, "the held request reached a-limited")
    meanwhile = await gw.client.post("/v1/chat/completions", json=CHAT)
    assert meanwhile.headers["x-switchyard-backend"] == "b-spare"
    report = report_of(await decision_of(gw, meanwhile), "a-limited")
    assert report["dropped_by"] == "capacity-filter"
    assert report["drop_reason"] == "at capacity: 1 of 1 in flight"
    assert (await held).headers["x-switchyard-backend"] == "a-limited"
    assert limited.runtime.stats.failed == 0, "a-limited never had to refuse"


async def test_a_token_budget_too_small_for_the_request_moves_it_before_a_refusal(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    # Each request may cost its prompt and 120 output tokens: after the first, the 200-token
    # budget has too few left for another, and capacity-filter knows it from the headers.
    limited = await start_emulator(rate_limit_tokens_per_minute=200)
    spare = await start_emulator()
    rotate_within_capacity = [
        {"ref": "healthy-filter"},
        {"ref": "capacity-filter"},
        {"ref": "round-robin-scorer"},
        {"ref": "max-score-picker"},
    ]
    gw = await start_gateway(
        make_config(
            {"a-limited": limited.base_url, "b-spare": spare.base_url},
            profile=rotate_within_capacity,
        )
    )
    body = {**CHAT, "max_tokens": 120}
    responses = [await gw.client.post("/v1/chat/completions", json=body) for _ in range(4)]
    assert [r.status_code for r in responses] == [200] * 4
    # Round robin would put a-limited first on the third request: its budget says no.
    served = [r.headers["x-switchyard-backend"] for r in responses]
    assert served == ["a-limited", "b-spare", "b-spare", "b-spare"]
    assert "upstream_429" not in await all_attempts(gw, responses)
    assert limited.runtime.stats.received == 1, "a-limited was never asked what it would refuse"
    report = report_of(await decision_of(gw, responses[2]), "a-limited")
    assert report["dropped_by"] == "capacity-filter"
    assert report["drop_reason"].startswith("provider token budget: ")
    assert report["drop_reason"].endswith(" tokens left before its reset, this request may use 124")

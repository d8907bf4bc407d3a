"""Fixtures and checks for the HTTP edge's tests: the app over one engine (with or without a
small body limit), or over a faulty engine ranked first and a healthy spare."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from emulator.server import EmulatorServer
from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config

SMALL_BODY_BYTES = 4096

StartBehindFaulty = Callable[[dict[str, Any]], Awaitable[tuple[RunningGateway, EmulatorServer]]]
"""Starts the app over `a`, an engine with the given faults, ranked first, and `b`, a healthy
one; returns the app and `b`."""


@pytest.fixture
async def gw(start_emulator: StartEmulator, start_gateway: StartGateway) -> RunningGateway:
    """The app over one engine, `only`."""
    engine = await start_emulator()
    return await start_gateway(make_config({"only": engine.base_url}))


@pytest.fixture
async def small_body_gw(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> RunningGateway:
    """The app over one engine, `only`, taking bodies of at most SMALL_BODY_BYTES."""
    engine = await start_emulator()
    server = {"max_body_bytes": SMALL_BODY_BYTES}
    return await start_gateway(make_config({"only": engine.base_url}, server=server))


@pytest.fixture
def start_behind_faulty(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> StartBehindFaulty:
    async def start(faults: dict[str, Any]) -> tuple[RunningGateway, EmulatorServer]:
        faulty = await start_emulator(faults=faults)
        spare = await start_emulator()
        gw = await start_gateway(make_config({"a": faulty.base_url, "b": spare.base_url}))
        return gw, spare

    return start


async def assert_retried_on_the_spare(gw: RunningGateway, response: httpx.Response) -> None:
    """`a` failed with a 500 before the first byte, and `b` answered."""
    assert response.status_code == 200, response.text
    assert response.headers["x-switchyard-backend"] == "b"
    decision_id = response.headers["x-switchyard-decision"]
    decision = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    attempts = [(a["backend"], a["outcome"]) for a in decision["attempts"]]
    assert attempts == [("a", "upstream_500"), ("b", "ok")]


def assert_openai_error(response: httpx.Response, status: int, code: str | None) -> dict[str, Any]:
    """An OpenAI-shaped error with this status (and code, unless None); its `error`."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    return error

"""Fixtures for the mixed-format route: its engines, a gateway over them, and the anthropic
SDK pointed at whichever gateway a module starts (its own `gw`, or this one)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway
from tests.integration.mixed_fleet import Fleet, start_fleet


@pytest.fixture
async def fleet(start_emulator: StartEmulator, monkeypatch: pytest.MonkeyPatch) -> Fleet:
    return await start_fleet(start_emulator, monkeypatch)


@pytest.fixture
async def gw(fleet: Fleet, start_gateway: StartGateway) -> RunningGateway:
    return await start_gateway(fleet.config)


@pytest.fixture
async def claude_sdk(gw: RunningGateway) -> AsyncIterator[anthropic.AsyncAnthropic]:
    sdk = anthropic.AsyncAnthropic(base_url=gw.url, api_key="unused", max_retries=0)
    yield sdk
    await sdk.close()

"""Fixtures for the mixed-format route: its engines and a gateway over them."""

from __future__ import annotations

import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway
from tests.integration.mixed_fleet import Fleet, start_fleet


@pytest.fixture
async def fleet(start_emulator: StartEmulator, monkeypatch: pytest.MonkeyPatch) -> Fleet:
    return await start_fleet(start_emulator, monkeypatch)


@pytest.fixture
async def gw(fleet: Fleet, start_gateway: StartGateway) -> RunningGateway:
    return await start_gateway(fleet.config)

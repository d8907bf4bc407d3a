"""The scripted upstream the adapters' tests run against, stopped at teardown."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.providers.fake_upstream import ScriptedServer, running


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedServer]:
    """A generic record-and-reply server; each streamed piece arrives in a read of its own."""
    async with running(ScriptedServer(piece_gap_s=0.01)) as server:
        yield server

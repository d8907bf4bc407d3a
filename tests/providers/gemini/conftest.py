"""A scripted Gemini-wire server per test, stopped at teardown."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.providers.gemini.fake_gemini import ScriptedServer


@pytest.fixture
async def gemini_server() -> AsyncIterator[ScriptedServer]:
    server = ScriptedServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()

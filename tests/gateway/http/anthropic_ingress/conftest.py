"""A backend that records what the gateway sent it, for the ingress tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from emulator.loopback import LoopbackServer
from tests.gateway.http.anthropic_ingress.test_messages_api import CaptureBackend


@pytest.fixture
async def capture() -> AsyncIterator[tuple[CaptureBackend, str]]:
    backend = CaptureBackend()
    server = LoopbackServer(backend.app, lifespan="off")
    await server.start()
    yield backend, server.url + "/v1"
    await server.stop()

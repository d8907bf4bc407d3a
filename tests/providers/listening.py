"""Whether something still listens at a base URL: for tests that check engines were stopped."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit


async def accepts_connections(base_url: str) -> bool:
    parts = urlsplit(base_url)
    assert parts.hostname is not None and parts.port is not None
    try:
        _, writer = await asyncio.open_connection(parts.hostname, parts.port)
    except OSError:
        return False
    writer.close()
    await writer.wait_closed()
    return True

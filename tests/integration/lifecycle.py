"""A gateway served from a YAML file on loopback, which it can reload, over emulated
engines; and reading a stream a chunk at a time. For the reload and shutdown tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from emulator.loopback import LoopbackServer
from gateway.config.root import load_config
from gateway.http.app import SwitchyardApp, create_app
from gateway.process.runtime import Runtime
from gateway.process.service import Gateway

ADMIN_ENV = "SY_LIFECYCLE_ADMIN_KEYS"
MODEL = "emulated-model"
"""The model every emulator serves by default."""
ADMIN = {"authorization": "Bearer admin-key-1"}


def backend(name: str, url: str) -> dict[str, Any]:
    return {"name": name, "base_url": url, "models": [MODEL]}


def fleet_config(
    backends: list[dict[str, Any]], routes: dict[str, list[str]], **sections: Any
) -> dict[str, Any]:
    """Backends serving the emulators' model, routes over them, round-robin, admin API on."""
    return {
        "server": {"admin_keys_env": ADMIN_ENV, **sections.pop("server", {})},
        "backends": backends,
        "routes": [
            {"name": name, "model": MODEL, "backends": members} for name, members in routes.items()
        ],
        "profiles": [
            {
                "name": "balanced",
                "plugins": [
                    {"ref": "healthy-filter"},
                    {"ref": "round-robin-scorer"},
                    {"ref": "max-score-picker"},
                ],
            }
        ],
        "health": {"active_probes": False},
        "quality": {"enabled": False},
        **sections,
    }


class FileGateway:
    """The served app, its runtime and an HTTP client to it."""

    def __init__(self, app: SwitchyardApp, path: Path, client: httpx.AsyncClient) -> None:
        self.app = app
        self.path = path
        self.client = client

    @property
    def runtime(self) -> Runtime:
        runtime: Runtime = self.app.state.runtime
        return runtime

    @property
    def gateway(self) -> Gateway:
        return self.runtime.current

    def write(self, config: dict[str, Any] | str) -> None:
        _write(self.path, config)


def _write(path: Path, config: dict[str, Any] | str) -> None:
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))


@asynccontextmanager
async def file_gateway(path: Path, config: dict[str, Any]) -> AsyncIterator[FileGateway]:
    _write(path, config)
    app = create_app(load_config(path), reload_from=lambda: load_config(path))
    server = LoopbackServer(app, lifespan="on")
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            yield FileGateway(app, path, client)
    finally:
        await server.stop()


def chat(stream: bool = False, max_tokens: int = 8, route: str = "default") -> dict[str, Any]:
    return {
        "model": route,
        "messages": [{"role": "user", "content": "tell me about switchyards " * 20}],
        "max_tokens": max_tokens,
        "stream": stream,
    }


class OpenStream:
    """A streamed response read as it arrives."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._chunks = response.aiter_raw()
        self.text = ""

    async def read_until(self, marker: str) -> None:
        while marker not in self.text:
            self.text += (await anext(self._chunks)).decode()

    async def read_to_end(self) -> str:
        async for chunk in self._chunks:
            self.text += chunk.decode()
        return self.text


@asynccontextmanager
async def open_stream(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> AsyncIterator[OpenStream]:
    async with client.stream("POST", path, json=body) as response:
        assert response.status_code == 200, await response.aread()
        yield OpenStream(response)

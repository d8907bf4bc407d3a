"""Starting and stopping the gateway: what start-up opened is closed, even when it fails."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import aiohttp
import pytest

from gateway.process.service import start_gateway, stop_gateway
from gateway.quality.probes.prober import Prober
from providers.base import Provider
from providers.emulated import EmulatedProvider
from providers.registry import open_provider
from providers.settings import ProviderSettings
from tests.conftest import make_config, parsed
from tests.providers.listening import accepts_connections

NAMES = ("a", "b", "c")


def emulated_fleet(**sections: Any) -> dict[str, Any]:
    """Three emulated backends, scraped, under one route; quality probes on by default."""
    config = make_config(dict.fromkeys(NAMES, "unused"), model="m", **sections)
    config["backends"] = [
        {
            "name": name,
            "kind": "emulated",
            "models": ["m"],
            "emulator": {"token_delay_ms": 0},
            "metrics": {"interval_s": 0.05},
        }
        for name in NAMES
    ]
    return config


class Opener:
    """Opens real providers, keeping each with its (opened) connection pool; fails for one."""

    def __init__(self, fail_for: str | None = None) -> None:
        self.fail_for = fail_for
        self.opened: list[EmulatedProvider] = []
        self.sessions: list[aiohttp.ClientSession] = []

    async def __call__(self, settings: ProviderSettings) -> Provider:
        if settings.name == self.fail_for:
            raise OSError(f"engine {settings.name} could not start")
        provider = await open_provider(settings)
        assert isinstance(provider, EmulatedProvider)
        self.sessions.append(provider.adapter.session)  # opened now, to see it closed
        self.opened.append(provider)
        return provider


def telemetry_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "switchyard-telemetry"]


async def assert_all_closed(opener: Opener, tasks_before: set[asyncio.Task[Any]]) -> None:
    for provider in opener.opened:
        assert not await accepts_connections(provider.base_url), provider.name
    assert all(session.closed for session in opener.sessions)
    assert asyncio.all_tasks() - tasks_before == set()
    assert telemetry_threads() == []


def fail_telemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args: object) -> None:
        raise RuntimeError("telemetry could not start")

    monkeypatch.setattr("gateway.process.service.start_telemetry", broken)


def fail_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    # Inside telemetry's start, after its thread has started.
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the sampler could not start")

    monkeypatch.setattr("gateway.telemetry.wiring.Sampler", broken)


def fail_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    # After telemetry (sampler task, pipe thread) and the engine scraper have started.
    def broken(self: Prober) -> None:
        raise RuntimeError("probes could not start")

    monkeypatch.setattr(Prober, "start", broken)


@pytest.mark.parametrize(
    ("fail_for", "break_step", "opened"),
    [
        ("c", None, 2),
        (None, fail_telemetry, 3),
        (None, fail_sampler, 3),
        (None, fail_probes, 3),
    ],
    ids=["third-provider", "telemetry", "inside-telemetry", "after-telemetry-and-scraper"],
)
async def test_a_start_up_failing_half_way_closes_what_it_opened(
    monkeypatch: pytest.MonkeyPatch, fail_for: str | None, break_step: Any, opened: int
) -> None:
    tasks_before = asyncio.all_tasks()
    opener = Opener(fail_for)
    monkeypatch.setattr("gateway.process.service.open_provider", opener)
    if break_step is not None:
        break_step(monkeypatch)
    with pytest.raises((OSError, RuntimeError), match="could not start"):
        await start_gateway(parsed(emulated_fleet()))
    assert len(opener.opened) == len(opener.sessions) == opened
    await assert_all_closed(opener, tasks_before)


async def test_stop_closes_engines_pools_loops_and_telemetry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tasks_before = asyncio.all_tasks()
    opener = Opener()
    monkeypatch.setattr("gateway.process.service.open_provider", opener)
    gateway = await start_gateway(parsed(emulated_fleet(health={"active_probes": True})))
    try:
        running = {task.get_name() for task in asyncio.all_tasks() - tasks_before}
        assert {"health-probes", "quality-refresh", "engine-metrics"} <= running
        assert {"quality-probes-a", "telemetry-sampler"} <= running
        for provider in opener.opened:
            assert await accepts_connections(provider.base_url)
        # Engine scrapes go to the port each emulated engine was given at start.
        assert gateway.scraper is not None
        assert [t.url for t in gateway.scraper.targets] == [
            provider.base_url.removesuffix("/v1") + "/metrics" for provider in opener.opened
        ]
    finally:
        await stop_gateway(gateway)
    await assert_all_closed(opener, tasks_before)

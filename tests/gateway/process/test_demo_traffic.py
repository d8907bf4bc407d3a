"""Demo traffic goes through the gateway's own app like a client's, and only where clients
need no key: with client keys on it stays off, so none of it is refused (it would count as
`invalid_api_key` rejections)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually, make_config
from tests.gateway.telemetry.test_metrics_endpoint import drained

DEMO = {"traffic_rps": 50, "conversations": 2}
CLIENT_KEY = "sk-demo-client-7b3e90"


def demo_running() -> bool:
    return any(task.get_name() == "demo-traffic" for task in asyncio.all_tasks())


async def served(gw: RunningGateway) -> bool:
    return gw.gateway.telemetry.pipe.consumed >= 2


async def test_demo_traffic_runs_where_clients_need_no_key(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(models=["emulated-model"])
    gw = await start_gateway(make_config({"a": engine.base_url}, demo=DEMO))
    assert demo_running()
    await eventually(lambda: served(gw), "the demo's requests are recorded")
    assert gw.gateway.telemetry.refusals.counts == {}


@pytest.mark.parametrize("keys", ["static", "virtual"])
async def test_with_client_keys_the_demo_stays_off_and_nothing_is_refused(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    keys: str,
) -> None:
    monkeypatch.setenv("SY_DEMO_CLIENT_KEYS", CLIENT_KEY)
    monkeypatch.setenv("SWITCHYARD_KEY_SECRET", "d" * 32)
    engine = await start_emulator(models=["emulated-model"])
    sections: dict[str, object] = {"server": {"api_keys_env": "SY_DEMO_CLIENT_KEYS"}}
    if keys == "virtual":
        sections["keys"] = {"enabled": True}
        sections["store"] = {"url": f"sqlite+aiosqlite:///{tmp_path}/demo.db"}
    gw = await start_gateway(make_config({"a": engine.base_url}, demo=DEMO, **sections))
    assert gw.gateway.config.demo_traffic_on is False
    assert not demo_running(), "the lifespan started no demo task"
    chat = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    for _ in range(2):
        answered = await gw.client.post(
            "/v1/chat/completions", json=chat, headers={"authorization": f"Bearer {CLIENT_KEY}"}
        )
        assert answered.status_code == 200
    await drained(gw, 2)
    assert gw.gateway.telemetry.refusals.counts == {}

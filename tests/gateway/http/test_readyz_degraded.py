"""/readyz and /metrics name what is down while serving goes on: the store, Redis."""

from __future__ import annotations

from typing import Any

from tests.conftest import StartEmulator, StartGateway, eventually, make_config

CHAT: dict[str, Any] = {
    "model": "default",
    "messages": [{"role": "user", "content": "hello"}],
    "max_tokens": 4,
}
DEAD_REDIS = "redis://127.0.0.1:1/0"


async def test_all_up_names_nothing(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    gw = await start_gateway(make_config({"only": engine.base_url}))
    ready = await gw.client.get("/readyz")
    assert (ready.status_code, ready.json()["degraded"]) == (200, [])


async def test_a_dead_store_and_redis_are_named_and_requests_still_served(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    config = make_config(
        {"only": engine.base_url},
        store={
            "url": "postgresql+asyncpg://root@127.0.0.1:1/x",
            "connect_timeout_s": 0.2,
            "retry_after_s": 0.05,
        },
        state={"backend": "redis", "redis_url": DEAD_REDIS, "command_timeout_ms": 100},
        limits={"backend": "redis", "routes": {"default": {"rpm": 1_000_000}}},
    )
    gw = await start_gateway(config)
    assert (await gw.client.post("/v1/chat/completions", json=CHAT)).status_code == 200

    async def all_named() -> bool:
        degraded = (await gw.client.get("/readyz")).json()["degraded"]
        return bool(degraded == ["store", "redis:state-sync", "redis:limits"])

    await eventually(all_named, "/readyz naming the store and both uses of Redis")
    ready = await gw.client.get("/readyz")
    assert (ready.status_code, ready.json()["status"]) == (200, "ready")

    async def metrics_say_so() -> bool:
        text = (await gw.client.get("/metrics")).text
        return all(
            line in text
            for line in (
                "switchyard_store_up 0.0",
                'switchyard_redis_up{use="state-sync"} 0.0',
                'switchyard_redis_up{use="limits"} 0.0',
            )
        )

    await eventually(metrics_say_so, "the store and Redis gauges at 0")

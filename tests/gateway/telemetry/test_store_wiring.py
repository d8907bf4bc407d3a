"""The gateway writes its records to the store off the request path, and keeps serving
when the database is gone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import select

from gateway.fleet.state import FleetState
from gateway.quality.book.quality_book import QualityBook
from gateway.quality.config import QualityConfig
from gateway.quality.signals.observation import SignalEvent
from gateway.store.config import StoreConfig
from gateway.store.database import make_engine
from gateway.store.models import TABLES
from gateway.store.writer import StoreWriter
from gateway.telemetry.sampler import Sampler
from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config, parsed
from tests.gateway.telemetry.test_metrics_endpoint import drained, sampled, total

CHAT = {"model": "default", "messages": [{"role": "user", "content": "store me"}], "max_tokens": 3}


async def rows(url: str, table: str) -> list[dict[str, Any]]:
    engine = make_engine(url, 5.0)
    try:
        async with engine.connect() as conn:
            result = await conn.execute(select(TABLES[table]))
            return [dict(r._mapping) for r in result]
    finally:
        await engine.dispose()


async def store_gateway(
    start_emulator: StartEmulator, start_gateway: StartGateway, store: dict[str, Any]
) -> RunningGateway:
    a = await start_emulator(models=["emulated-model"])
    config = make_config({"a": a.base_url}, store={"flush_interval_s": 0.05, **store})
    config["backends"][0]["pricing"] = {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 1.0}
    return await start_gateway(config)


async def test_request_records_reach_sqlite(
    start_emulator: StartEmulator, start_gateway: StartGateway, tmp_path: Path
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'records.db'}"
    gw = await store_gateway(start_emulator, start_gateway, {"url": url})
    for stream in (False, True, False):
        r = await gw.client.post("/v1/chat/completions", json={**CHAT, "stream": stream})
        assert r.status_code == 200
    await gw.client.post("/v1/chat/completions", json={**CHAT, "model": "nope"})  # 404
    await drained(gw, 4)
    store = gw.gateway.telemetry.store
    assert store is not None
    await store.flush_now()
    stored = sorted(await rows(url, "requests"), key=lambda r: r["id"])
    got = [r for r in stored if r["decision_id"]]
    assert [r["stream"] for r in got] == [False, True, False]
    (refused,) = [r for r in stored if not r["decision_id"]]  # a sample of the refused
    assert (refused["status"], refused["error"], refused["route"]) == (404, "model_not_found", "")
    first = got[0]
    assert first["backend"] == "a" and first["status"] == 200 and first["route"] == "default"
    assert first["completion_tokens"] == 3 and first["prompt_tokens"] > 0
    assert first["cost_usd"] == pytest.approx((first["prompt_tokens"] + 3) / 1e6)
    assert first["deciding_policy"] == "only-candidate"
    assert "max-score-picker" in first["reasons"]
    assert first["prompt"] is None  # no prompt text unless store_prompts is on
    assert got[1]["ttft_ms"] is not None and got[0]["ttft_ms"] is None
    status = (await gw.client.get("/v1/switchyard/dashboard")).json()["store"]
    assert status["up"] is True and status["written"] >= 3 and "records.db" in status["url"]


async def test_prompts_are_kept_only_when_asked(
    start_emulator: StartEmulator, start_gateway: StartGateway, tmp_path: Path
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'prompts.db'}"
    gw = await store_gateway(
        start_emulator, start_gateway, {"url": url, "store_prompts": True, "max_prompt_bytes": 64}
    )
    long = {**CHAT, "messages": [{"role": "user", "content": "y" * 500}]}
    for body in (CHAT, long):
        assert (await gw.client.post("/v1/chat/completions", json=body)).status_code == 200
    await drained(gw, 2)
    assert gw.gateway.telemetry.store is not None
    await gw.gateway.telemetry.store.flush_now()
    got = sorted(await rows(url, "requests"), key=lambda r: r["id"])
    assert orjson.loads(got[0]["prompt"]) == {"messages": CHAT["messages"]}
    cut = orjson.loads(got[1]["prompt"])
    assert cut["truncated"] is True and len(cut["text"]) <= 64 and cut["bytes"] > 500


async def test_a_dead_database_costs_records_not_requests(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    # Rows wait (up to queue_size) for the database to come back; the rest are dropped.
    dead = {"url": "postgresql+asyncpg://root@127.0.0.1:1/none", "connect_timeout_s": 0.5,
            "retry_after_s": 0.1, "queue_size": 3}  # fmt: skip
    gw = await store_gateway(start_emulator, start_gateway, dead)
    for _ in range(5):
        assert (await gw.client.post("/v1/chat/completions", json=CHAT)).status_code == 200
    await drained(gw, 5)
    values = await sampled(gw, "switchyard_telemetry_dropped_total", 2, sink="store:requests")
    values = await sampled(gw, "switchyard_store_up", 0)
    assert total(values, "switchyard_telemetry_dropped_total", sink="store:requests") == 2
    store = (await gw.client.get("/v1/switchyard/dashboard")).json()["store"]
    assert store["up"] is False and store["last_error"]
    assert (store["queued"], store["dropped"]) == (3, 2)
    assert "127.0.0.1:1" in store["url"]


async def test_quality_changes_scores_and_probes_become_rows(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'quality.db'}"
    clock = [100.0]
    book = QualityBook(QualityConfig(min_evidence=3), clock=lambda: clock[0])
    config = parsed(make_config({"a": "http://127.0.0.1:9/v1"}))
    writer = StoreWriter(StoreConfig(url=url), url)
    await writer.start()
    try:
        sampler = Sampler(
            FleetState(config.backends, config.health),
            book=book,
            store=writer,
            snapshot_every_s=10.0,
            clock=lambda: clock[0],
        )
        book.record("a", "m", [SignalEvent("error", False, "fidelity")])  # unknown -> healthy
        for _ in range(30):
            book.record("a", "m", [SignalEvent("error", True, "fidelity", "upstream 500")])
        clock[0] += 11.0
        sampler.tick()
        await writer.flush_now()
    finally:
        await writer.stop()
    events = await rows(url, "quality_events")
    # healthy -> suspect -> ejected: the trial convicted it on the errors that followed
    transitions = [(e["from_state"], e["to_state"]) for e in events]
    assert transitions[-2:] == [("healthy", "suspect"), ("suspect", "ejected")]
    assert events[-1]["backend"] == "a" and events[-1]["fidelity"] < 0.8
    assert '"to":"ejected"' in events[-1]["reason"].split("\nevidence: ")[1]
    scores = await rows(url, "quality_scores")
    assert len(scores) == 1 and scores[0]["state"] == "ejected"
    assert scores[0]["signals"][0]["signal"] == "error"
    assert events[-1]["replica"].endswith(f":{os.getpid()}")


async def test_a_restarted_gateway_remembers_a_bad_backend(
    start_emulator: StartEmulator, start_gateway: StartGateway, tmp_path: Path
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    clock = [100.0]
    book = QualityBook(QualityConfig(), clock=lambda: clock[0])
    book.record("a", "emulated-model", [SignalEvent("error", False, "fidelity")])
    for _ in range(30):
        book.record("a", "emulated-model", [SignalEvent("error", True, "fidelity", "500")])
    assert book.view("a", "emulated-model").state == "ejected"
    writer = StoreWriter(StoreConfig(url=url), url)
    await writer.start()
    config = parsed(make_config({"a": "http://127.0.0.1:9/v1"}))
    sampler = Sampler(
        FleetState(config.backends, config.health),
        book=book,
        store=writer,
        snapshot_every_s=1.0,
        clock=lambda: clock[0],
    )
    clock[0] += 2.0
    sampler.tick()
    await writer.stop()

    gw = await store_gateway(start_emulator, start_gateway, {"url": url})
    assert gw.gateway.quality is not None
    restored = gw.gateway.quality.book
    view = restored.view("a", "emulated-model")
    assert view.state == "ejected" and view.fidelity < 0.8
    bad, total = restored.evidence("a", "emulated-model")["error"]
    assert total == pytest.approx(31, rel=0.05) and bad == pytest.approx(30, rel=0.05)

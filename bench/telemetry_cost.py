"""What telemetry costs: process CPU per request with metrics, dashboard series and the
SQLite store on versus all off (alternating rounds, one process, so only the difference
means something); each sink's time per record on the telemetry thread; and how many rows
per second the store writes to SQLite and PostgreSQL.

    switchyard bench telemetry [--quick]      (or: python -m bench.telemetry_cost)
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from emulator.loopback import LoopbackServer
from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings
from gateway.config.root import parse_config
from gateway.http.app import create_app
from gateway.process.service import Gateway
from gateway.store.config import StoreConfig
from gateway.store.writer import StoreWriter
from gateway.telemetry.record import RequestRecord
from gateway.telemetry.store_sink import StoreSink
from policies.prices import NO_PRICES

PG_SERVER = os.environ.get("SWITCHYARD_BENCH_PG", "postgresql://root@127.0.0.1:5432/test")
"""A PostgreSQL server and a database to connect to; the bench writes to a database of
its own there, dropped at the end."""


BATCH = StoreConfig().batch_size
VARIANTS = ("off", "metrics+dashboard", "metrics+dashboard+store")


def _config(url: str, variant: str, db: Path) -> dict[str, Any]:
    on = variant != "off"
    config: dict[str, Any] = {
        "backends": [{"name": "e", "base_url": url, "models": ["m"]}],
        "routes": [{"name": "default", "model": "m", "backends": ["e"]}],
        "profiles": [
            {"name": "balanced", "plugins": [{"ref": "least-load-scorer"}, {"ref": "sticky"}]}
        ],
        "policies": [{"type": "session-affinity-scorer", "name": "sticky"}],
        "health": {"active_probes": False},
        "quality": {"enabled": False},
        "telemetry": {"prometheus": on, "dashboard": on},
    }
    if variant.endswith("store"):
        config["store"] = {"url": f"sqlite+aiosqlite:///{db}"}
    return config


def _body(i: int) -> dict[str, Any]:
    stream = i % 2 == 0
    body: dict[str, Any] = {
        "model": "default",
        "messages": [{"role": "user", "content": f"hello there {i % 7} " * 50}],
        "max_tokens": 32,
        "stream": stream,
        "user": f"u{i % 13}",
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


class Keep:
    """A sink that keeps the records, for timing the real sinks on them afterwards."""

    name = "keep"

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []

    def consume(self, record: RequestRecord) -> None:
        self.records.append(record)


async def cpu_rounds(
    rounds: int, per_round: int, folder: Path
) -> tuple[dict[str, list[float]], dict[str, float], Keep]:
    """Process CPU seconds per request, one value per round and variant; and the telemetry
    thread's CPU seconds per record, per variant."""
    settings = EmulatorSettings(models=["m"], token_delay_ms=0.0, ignore_eos=True)
    engine = EmulatorServer(settings, port=0)
    await engine.start()
    servers: dict[str, LoopbackServer] = {}
    totals: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    keep = Keep()
    try:
        apps = {}
        for variant in VARIANTS:
            config = parse_config(_config(engine.base_url, variant, folder / "cost.db"))
            apps[variant] = create_app(config)
            servers[variant] = LoopbackServer(
                apps[variant], lifespan="on", keep_alive_s=config.server.keep_alive_s
            )
            await servers[variant].start()
        gateway: Gateway = apps[VARIANTS[-1]].state.gateway
        gateway.telemetry.pipe.add_sink(keep)
        async with httpx.AsyncClient(timeout=30) as client:
            for index in range(rounds):
                order = VARIANTS if index % 2 == 0 else VARIANTS[::-1]
                for variant in order:
                    url = servers[variant].url + "/v1/chat/completions"
                    started = time.process_time()
                    for i in range(per_round):
                        (await client.post(url, json=_body(i))).raise_for_status()
                    await asyncio.sleep(0.1)  # the thread drains and the store flushes here
                    totals[variant].append((time.process_time() - started) / per_round)
        thread = {}
        for variant, app in apps.items():
            pipe = app.state.gateway.telemetry.pipe
            thread[variant] = pipe.cpu_s / max(1, pipe.consumed)
    finally:
        for server in servers.values():
            await server.stop()
        await engine.stop()
    return totals, thread, keep


def sink_costs(gateway_records: list[RequestRecord], folder: Path) -> dict[str, float]:
    """Microseconds per record for each sink, on records from real requests."""
    from gateway.telemetry.access_log import AccessLog
    from gateway.telemetry.config import TelemetryConfig
    from gateway.telemetry.metrics import GatewayMetrics
    from gateway.telemetry.series import DashboardSeries

    writer = StoreWriter(StoreConfig(queue_size=10**7), f"sqlite+aiosqlite:///{folder / 'x.db'}")
    # The access log as `switchyard serve` runs it: INFO, one formatted line per record.
    access = logging.getLogger("switchyard.access")
    saved = access.level, access.propagate
    access.setLevel(logging.INFO)
    access.propagate = False
    devnull = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115
    access.addHandler(devnull)
    sinks: list[Any] = [
        GatewayMetrics(),
        DashboardSeries(TelemetryConfig(), NO_PRICES, {}),
        StoreSink(writer, {}, NO_PRICES),
        AccessLog(),
    ]
    out: dict[str, float] = {}
    for sink in sinks:
        started = time.perf_counter()
        for record in gateway_records:
            record._deciding = None  # each sink pays for the deciding policy as if first
            sink.consume(record)
        out[sink.name] = (time.perf_counter() - started) / len(gateway_records) * 1e6
    access.removeHandler(devnull)
    devnull.stream.close()
    access.setLevel(saved[0])
    access.propagate = saved[1]
    return out


async def postgres_rate(rows: list[dict[str, Any]]) -> float | None:
    """Rows/s into a fresh database on the PostgreSQL server, or None when unreachable."""
    import asyncpg
    from sqlalchemy.engine import make_url

    server = make_url(PG_SERVER)
    try:
        admin = await asyncpg.connect(
            host=server.host, port=server.port, user=server.username,
            password=server.password, database=server.database, timeout=3,
        )  # fmt: skip
    except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
        print(f"  PostgreSQL: not reachable ({type(exc).__name__}), skipped")
        return None
    name = f"switchyard_bench_{secrets.token_hex(4)}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        url = server.set(drivername="postgresql+asyncpg", database=name)
        return await store_rate(url.render_as_string(hide_password=False), rows, "PostgreSQL")
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def store_rate(url: str, rows: list[dict[str, Any]], label: str) -> float | None:
    config = StoreConfig(queue_size=len(rows) + 1, batch_size=BATCH, flush_interval_s=0.01)
    writer = StoreWriter(config, url)
    await writer.start()
    try:
        if not writer.status()["up"]:
            print(f"  {label}: not reachable, skipped")
            return None
        for row in rows:
            writer.put("requests", row)
        started = time.perf_counter()
        while writer.status()["written"] < len(rows):
            await writer.flush_now()
        return len(rows) / (time.perf_counter() - started)
    finally:
        await writer.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (CI)")
    args = parser.parse_args(argv)
    rounds, per_round = (2, 40) if args.quick else (40, 60)
    store_rows = 2_000 if args.quick else 20_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        totals, thread, keep = asyncio.run(cpu_rounds(rounds, per_round, folder))
        off = statistics.median(totals["off"]) * 1e6
        print(f"process CPU per request (median of {rounds} rounds), telemetry off: {off:.0f} us")
        for variant in VARIANTS[1:]:
            on = statistics.median(totals[variant]) * 1e6
            # Each round's cost against the "off" round next to it: robust to a noisy machine.
            paired = statistics.median(
                (v - o) * 1e6 for v, o in zip(totals[variant], totals["off"], strict=True)
            )
            print(f"  {variant}: {on:.0f} us (+{paired:.0f} us paired, {on / off:.2f}x)")
        print(
            "telemetry thread CPU per record, measured in the gateway: "
            + ", ".join(f"{v} {t * 1e6:.1f} us" for v, t in thread.items())
        )
        costs = sink_costs(keep.records, folder)
        print(
            "telemetry thread, per record: "
            + ", ".join(f"{k} {v:.1f} us" for k, v in costs.items())
        )
        rows = [StoreSink(StoreWriter(StoreConfig(), "sqlite+aiosqlite://"), {}, NO_PRICES).row(r)
                for r in keep.records]  # fmt: skip
        rows = (rows * (store_rows // max(1, len(rows)) + 1))[:store_rows]
        sqlite = f"sqlite+aiosqlite:///{folder / 'rate.db'}"
        rates = {
            "SQLite": asyncio.run(store_rate(sqlite, rows, "SQLite")),
            "PostgreSQL": asyncio.run(postgres_rate(rows)),
        }
        for label, rate in rates.items():
            if rate is not None:
                print(f"store writes to {label}: {rate:,.0f} rows/s (batches of {BATCH})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

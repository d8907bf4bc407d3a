"""`switchyard serve` under a flood of slow clients (slowloris): hundreds of connections that
send half a request head and wait. A normal client's requests still succeed, at about the
latency they have without the flood, and the flood's connections end with 408 once their
header timeout passes; with `--workers 2` each worker bounds its own and /metrics adds them
up. `switchyard bench slow-clients` measures the same with more requests and prints it.
"""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import until
from tests.gateway.processes import free_port, running, wait_ready
from tests.gateway.telemetry.test_workers import CONFIG

HEADER_S = 5.0
"""Long enough for the measured requests to run while the flood is held open."""
HALF_A_HEAD = (
    b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
)
ASK = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
LATENCY_RATIO_BOUND = 10.0
"""Generous: the machine is shared and noisy. A gateway the flood starves answers in
seconds (a header timeout), not milliseconds: hundreds of times slower."""


@contextmanager
def _serving(tmp_path: Path, *extra: str, max_connections: int) -> Iterator[str]:
    clients = {"header_timeout_s": HEADER_S, "max_connections": max_connections}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "server": {"clients": clients}}))
    port = free_port()
    command = ["serve", "--config", str(config), "--port", str(port), "--log-level", "warning"]
    log = tmp_path / "serve.log"
    with running([*command, *extra], log) as proc:
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/readyz", proc, log, timeout_s=30)
        yield base


def _slow_clients(stack: ExitStack, base: str, count: int) -> list[socket.socket]:
    """`count` connections, each with half a request head sent and nothing more."""
    host, port = base.removeprefix("http://").split(":")
    slow = []
    for _ in range(count):
        conn = stack.enter_context(socket.create_connection((host, int(port)), timeout=30))
        conn.sendall(HALF_A_HEAD)
        slow.append(conn)
    return slow


def _latencies_ms(client: httpx.Client, count: int) -> list[float]:
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        response = client.post("/v1/chat/completions", json=ASK)
        latencies.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
    return latencies


def _until_closed(conn: socket.socket) -> bytes:
    received = b""
    while chunk := conn.recv(65536):
        received += chunk
    return received


def test_a_normal_client_is_served_as_fast_while_300_slow_ones_hold_connections(
    tmp_path: Path,
) -> None:
    flood = 300
    with _serving(tmp_path, max_connections=flood + 20) as base, ExitStack() as stack:
        with httpx.Client(base_url=base, timeout=30, trust_env=False) as client:
            _latencies_ms(client, 10)  # warm-up
            alone = _latencies_ms(client, 30)
            opened = time.monotonic()
            slow = _slow_clients(stack, base, flood)
            flooded = _latencies_ms(client, 30)
            measured_within_s = time.monotonic() - opened
        ratio = statistics.median(flooded) / statistics.median(alone)
        print(
            f"median latency: {statistics.median(alone):.1f} ms alone, "
            f"{statistics.median(flooded):.1f} ms with {flood} slow clients ({ratio:.2f}x)"
        )
        if measured_within_s >= HEADER_S:
            pytest.skip(f"the machine is too slow to measure: {measured_within_s:.1f} s")
        assert ratio < LATENCY_RATIO_BOUND
        answers = [_until_closed(conn) for conn in slow]
    assert all(a.startswith(b"HTTP/1.1 408 ") for a in answers)


def test_with_workers_each_bounds_its_slow_clients_and_metrics_add_them_up(
    tmp_path: Path,
) -> None:
    flood = 20
    with _serving(tmp_path, "--workers", "2", max_connections=100) as base, ExitStack() as stack:
        slow = _slow_clients(stack, base, flood)
        answers = [_until_closed(conn) for conn in slow]
        assert all(a.startswith(b"HTTP/1.1 408 ") for a in answers)

        def counted() -> bool:
            text = httpx.get(f"{base}/metrics", trust_env=False).text
            wanted = (
                f'switchyard_client_connections_closed_total{{bound="header_timeout"}} {flood}.0'
            )
            return wanted in text

        until(counted, f"{flood} header timeouts counted across workers")

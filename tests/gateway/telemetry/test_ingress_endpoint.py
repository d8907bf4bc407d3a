"""Records, the store and Prometheus name the API a client called: a `/v1/messages` or
`/v1/responses` request is routed as a chat completion but counted as what it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import StartEmulator, StartGateway, make_config
from tests.gateway.telemetry.test_metrics_endpoint import drained, samples, total
from tests.gateway.telemetry.test_store_wiring import rows

MESSAGES = [{"role": "user", "content": "which door did I come in by?"}]
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("/v1/chat/completions", {"messages": MESSAGES, "max_tokens": 3}),
    ("/v1/messages", {"messages": MESSAGES, "max_tokens": 3}),
    ("/v1/messages", {"messages": MESSAGES, "max_tokens": 3, "stream": True}),
    ("/v1/responses", {"input": "which door?", "max_output_tokens": 16}),
    ("/v1/completions", {"prompt": "which door?", "max_tokens": 3}),
]
EXPECTED = {"chat.completions": 1, "messages": 2, "responses": 1, "completions": 1}


async def test_each_request_is_counted_under_the_api_it_called(
    start_emulator: StartEmulator, start_gateway: StartGateway, tmp_path: Path
) -> None:
    engine = await start_emulator(models=["emulated-model"])
    url = f"sqlite+aiosqlite:///{tmp_path / 'records.db'}"
    gw = await start_gateway(
        make_config({"a": engine.base_url}, store={"url": url, "flush_interval_s": 0.05})
    )
    for path, body in REQUESTS:
        reply = await gw.client.post(path, json={"model": "default", **body})
        assert reply.status_code == 200, reply.text
    await drained(gw, len(REQUESTS))

    values = samples((await gw.client.get("/metrics")).text)
    for endpoint, count in EXPECTED.items():
        assert total(values, "switchyard_requests_total", endpoint=endpoint) == count
    assert total(values, "switchyard_requests_total", endpoint="embeddings") == 0

    store = gw.gateway.telemetry.store
    assert store is not None
    await store.flush_now()
    stored = sorted(await rows(url, "requests"), key=lambda r: r["id"])
    assert [(r["endpoint"], r["stream"]) for r in stored] == [
        ("chat.completions", False),
        ("messages", False),
        ("messages", True),
        ("responses", False),
        ("completions", False),
    ]

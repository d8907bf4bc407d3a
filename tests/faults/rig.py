"""A gateway over emulated engines for the fault suite, with what each test reads back:
what each engine received, the request records, the backends' health, SSE events."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx
import orjson

from emulator.server import EmulatorServer
from emulator.settings import Faults
from gateway.telemetry.record import RequestRecord
from policies.base import PolicyParams, Role, Score
from policies.snapshot import BackendView, Snapshot
from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually

ROUTE = "default"
MODEL = "emulated-model"
POLICIES: list[dict[str, Any]] = [
    {"type": "tests.faults.rig:NameOrderScorer", "name": "name-order"},
]
PROFILE: list[dict[str, Any]] = [
    {"ref": "healthy-filter"},
    {"ref": "name-order"},
    {"ref": "max-score-picker"},
]
"""The first backend by name that is healthy is tried first (`a`, then `b`, then `c`): each
test knows which engine a request reaches."""


class NameOrderScorer:
    """Scores candidates by their name's place in alphabetical order, first highest."""

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "name-order-scorer"

    class Params(PolicyParams):
        pass

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        names = sorted(b.name for b in candidates)
        return {n: Score(1.0 - i / len(names), f"{i + 1} by name") for i, n in enumerate(names)}


def chat(*, stream: bool = False, max_tokens: int = 12) -> dict[str, Any]:
    """A chat request; a stream asks for its usage (what the record bills)."""
    messages = [{"role": "user", "content": "tell me about the fault suite"}]
    body: dict[str, Any] = {"model": ROUTE, "messages": messages, "max_tokens": max_tokens}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return body


class RecordSink:
    """Keeps every request record the telemetry thread hands over, and its cost."""

    name = "fault-suite"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[RequestRecord] = []

    def consume(self, record: RequestRecord) -> None:
        with self._lock:
            self.records.append(record)


@dataclass
class Rig:
    gw: RunningGateway
    engines: dict[str, EmulatorServer]
    sink: RecordSink

    @property
    def client(self) -> httpx.AsyncClient:
        return self.gw.client

    def received(self) -> dict[str, int]:
        """Inference requests each engine received."""
        return {name: e.runtime.stats.received for name, e in self.engines.items()}

    def fault(self, name: str, **faults: Any) -> None:
        self.engines[name].runtime.faults = Faults(**faults)

    def health(self) -> dict[str, dict[str, object]]:
        return {str(b["name"]): b for b in self.gw.gateway.state.describe()}

    def idle(self) -> bool:
        return all(b["in_flight"] == 0 for b in self.gw.gateway.state.describe())

    async def records(self, count: int) -> list[RequestRecord]:
        """The first `count` request records, once the telemetry thread has them all."""

        async def arrived() -> bool:
            return len(self.sink.records) >= count and self.idle()

        await eventually(arrived, f"{count} request records")
        return self.sink.records[:count]

    async def last_record(self) -> RequestRecord:
        return (await self.records(len(self.sink.records) or 1))[-1]

    def cost_usd(self, record: RequestRecord) -> float:
        """What the record bills, as the telemetry prices it: the serving backend's."""
        if record.backend is None:
            return record.cost_usd(None)
        backends = {b.name: b for b in self.gw.gateway.config.backends}
        return record.cost_usd(backends[record.backend].pricing)

    async def metric(self, name: str, **labels: str) -> float:
        """The sum of a Prometheus family's samples that carry `labels`."""
        text = (await self.client.get("/metrics")).text
        total = 0.0
        for line in text.splitlines():
            if not line.startswith(name + "{"):
                continue
            head, value = line.rsplit(" ", 1)
            if all(f'{k}="{v}"' in head for k, v in labels.items()):
                total += float(value)
        return total


def attempts(record: RequestRecord) -> list[tuple[str, str]]:
    return [(a.backend, a.outcome) for a in record.decision.attempts]


def sse_data(body: bytes) -> list[bytes]:
    return [line[6:] for line in body.split(b"\n") if line.startswith(b"data: ")]


def sse_events(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of each named SSE event (Anthropic's and Responses' streams)."""
    events: list[tuple[str, dict[str, Any]]] = []
    for block in body.split(b"\n\n"):
        name, data = "", b""
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                name = line[7:].decode()
            elif line.startswith(b"data: "):
                data = line[6:]
        if data:
            events.append((name, orjson.loads(data)))
    return events


def openai_error(body: bytes) -> dict[str, Any]:
    """The error event that ends an OpenAI stream; fails when it ends any other way."""
    data = sse_data(body)
    assert data, "an empty stream"
    assert b"[DONE]" not in data, "a failed stream must not end with [DONE]"
    error: dict[str, Any] = orjson.loads(data[-1])["error"]
    return error


async def start_rig(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    names: tuple[str, ...] = ("a", "b"),
    *,
    token_delay_ms: float = 0.0,
    **sections: Any,
) -> Rig:
    """Engines `names` (priced 1, 2, 3 USD per Mtok), one route `default` over them (first
    by name first), the records kept."""
    engines = {n: await start_emulator(token_delay_ms=token_delay_ms) for n in names}
    prices = {n: float(i + 1) for i, n in enumerate(names)}
    backends = [
        {
            "name": n,
            "base_url": engines[n].base_url,
            "models": [MODEL],
            "pricing": {"input_usd_per_mtok": prices[n], "output_usd_per_mtok": prices[n]},
        }
        for n in names
    ]
    config: dict[str, Any] = {
        "backends": backends,
        "routes": [{"name": ROUTE, "model": MODEL, "backends": list(names)}],
        "policies": POLICIES,
        "profiles": [{"name": "balanced", "plugins": PROFILE}],
        # Failures must reach the dispatcher, not a prober between requests.
        "health": {"active_probes": False},
        "telemetry": {"access_log": "off"},
    }
    config.update(sections)
    gw = await start_gateway(config)
    sink = RecordSink()
    gw.gateway.telemetry.pipe.add_sink(sink)
    return Rig(gw, engines, sink)

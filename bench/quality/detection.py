"""Fault detection: how fast the quality scores demote a faulty backend, and how rarely a
healthy one, on a virtual clock with seeded faults.

Each scenario runs two real emulated engines on loopback, a faulty one and its healthy
twin, behind the gateway's own parts: the provider adapter, the response collector, the
passive signals, the quality book, the probes and the quality-filter policy. Only time
is virtual: one request per virtual second, a probe cycle every `probe_interval_s`.

Phases: warm-up (both healthy; one probe cycle sets the canary baselines), fault on
until the faulty backend is ejected (or a limit), a stretch with the fault on, then the
fault cleared until the backend is healthy again (or a limit).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import orjson

from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings, Faults
from gateway.prefix.fingerprint import Fingerprinter
from gateway.prefix.token_count import TokenCounter
from gateway.quality.book.quality_book import QualityBook
from gateway.quality.config import ProbeConfig, QualityConfig
from gateway.quality.probes.prober import Prober
from gateway.quality.signals.collect import StreamCollector, collect_body
from gateway.quality.signals.passive import QualityRecorder, request_context
from policies.filters.quality_filter import QualityFilter
from policies.snapshot import BackendView, QualityView, RequestInfo, Snapshot
from providers.base import Deadlines, UpstreamRequest
from providers.openai_compatible import OpenAICompatibleProvider

MODEL = "emulated-model"
_DEADLINES = Deadlines(connect_s=10.0, first_byte_s=30.0, between_chunks_s=30.0)
_WORDS = ("river", "stone", "signal", "engine", "router", "switch", "track", "train", "yard")


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    fault: str
    """What the faulty backend does, in words (the table's first column)."""
    faults: dict[str, Any]
    workload: str
    """chat, tools or long."""
    target_requests: int | None = None
    """The issue's target: ejected within this many requests to the faulty backend."""
    target_cycles: int | None = None
    """... or within this many probe cycles after the fault starts."""
    twin_faults: dict[str, Any] = field(default_factory=dict)
    """The twin's own (tolerable) faults, if any: a healthy provider is not perfect."""


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "tool-calls", "20% malformed tool calls", {"malformed_tool_call_rate": 0.2}, "tools", 40
    ),
    Scenario(
        "truncation",
        "context cut to its last 2,048 tokens",
        {"truncate_context_tokens": 2048},
        "long",
        20,
    ),
    Scenario("loops", "looping output on 50% of answers", {"loop_rate": 0.5}, "chat", 10),
    Scenario("substituted", "substituted model", {"substitute_model": True}, "chat", None, 2),
    Scenario(
        "tool-calls-noisy-twin",
        "20% malformed tool calls, twin 3% (its tolerated rate)",
        {"malformed_tool_call_rate": 0.2},
        "tools",
        40,
        twin_faults={"malformed_tool_call_rate": 0.03},
    ),
)


@dataclass
class Outcome:
    scenario: Scenario
    faulty_requests_to_ejection: int | None = None
    seconds_to_ejection: float | None = None
    cycles_to_ejection: int | None = None
    ejected_by: str = ""
    seconds_to_restore: float | None = None
    faulty_state_changes: int = 0
    twin_requests: int = 0
    twin_ejections: int = 0
    faulty_requests: int = 0
    probe_tokens: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def met(self) -> bool:
        s = self.scenario
        detected = (
            s.target_requests is None
            or (self.faulty_requests_to_ejection or 10**9) <= s.target_requests
        ) and (s.target_cycles is None or (self.cycles_to_ejection or 10**9) <= s.target_cycles)
        return detected and self.twin_ejections == 0 and self.seconds_to_restore is not None


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Harness:
    """One scenario's fleet of two, the quality parts, and the loop that drives them."""

    def __init__(self, scenario: Scenario, *, seed: int, probe_interval_s: float) -> None:
        self.scenario = scenario
        self.seed = seed
        self.clock = VirtualClock()
        self.book = QualityBook(QualityConfig(), clock=self.clock, rng=random.Random(seed))
        self.recorder = QualityRecorder(self.book)
        self.filter = QualityFilter("quality-filter", QualityFilter.Params())
        self.rng = random.Random(seed)
        self.probe_interval_s = probe_interval_s
        self.fingerprinter = Fingerprinter(TokenCounter())
        self.servers: dict[str, EmulatorServer] = {}
        self.providers: dict[str, OpenAICompatibleProvider] = {}
        self.prober: Prober | None = None
        self.step = 0
        self.next_probe_at = 0.0
        self.served: dict[str, int] = {"faulty": 0, "twin": 0}

    async def __aenter__(self) -> Harness:
        for name in ("faulty", "twin"):
            # Answers end on their own, as a real engine's do: detection is judged on them.
            settings = EmulatorSettings(models=[MODEL], token_delay_ms=0.0, time_scale=0.0)
            server = EmulatorServer(settings, host="127.0.0.1", port=0)
            await server.start()
            self.servers[name] = server
            self.providers[name] = OpenAICompatibleProvider(name, server.base_url, None)
        probes = ProbeConfig(needle_tokens=3000)
        configs = dict.fromkeys(self.providers, probes)
        targets = [(name, MODEL) for name in self.providers]
        self.prober = Prober(
            configs, self.book, self.providers, targets, clock=self.clock, rng=self.rng
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        for provider in self.providers.values():
            await provider.close()
        for server in self.servers.values():
            await server.stop()

    def set_twin_faults(self) -> None:
        faults = self.scenario.twin_faults
        self.servers["twin"].runtime.faults = Faults(**faults, seed=self.seed + 1)

    def set_fault(self, on: bool) -> None:
        faults = {**self.scenario.faults, "seed": self.seed} if on else {}
        self.servers["faulty"].runtime.faults = Faults(**faults)

    def view(self, name: str) -> QualityView:
        return self.book.view(name, MODEL)

    async def tick(self) -> str:
        """One virtual second: maybe a probe cycle, then one routed request."""
        self.clock.now += 1.0
        self.step += 1
        self.book.refresh()  # what the gateway's once-a-second task does
        if self.clock.now >= self.next_probe_at:
            assert self.prober is not None
            await self.prober.run_cycle()
            self.next_probe_at = self.clock.now + self.probe_interval_s
        backend = self._route()
        await self._request(backend)
        self.served[backend] += 1
        return backend

    def _route(self) -> str:
        names = ("faulty", "twin")
        info = RequestInfo(
            "r", MODEL, "chat.completions", False, None, self.step, self.rng.getrandbits(63)
        )
        quality = {name: self.view(name) for name in names}
        snapshot = Snapshot(info, {}, 0.0, quality=quality)
        views = [_backend(name) for name in names]
        verdicts = self.filter.filter(snapshot, views)
        kept = [name for name in names if verdicts[name].keep]
        return kept[self.step % len(kept)]

    async def _request(self, backend: str) -> None:
        body = self._body()
        tokens = self.fingerprinter.chat(MODEL, body["messages"], body.get("tools")).prompt_tokens
        context = request_context(
            MODEL,
            body,
            max_tokens=body["max_tokens"],
            prompt_tokens=tokens,
            ttft_target_ms=None,
            tpot_target_ms=None,
        )
        provider = self.providers[backend]
        request = UpstreamRequest("/chat/completions", orjson.dumps(body), body["stream"])
        if body["stream"]:
            stream = await provider.open_stream(request, _DEADLINES)
            collector = StreamCollector()
            collector.feed(stream.first_chunk)
            async for chunk in stream.rest():
                collector.feed(chunk)
            await stream.aclose()
            collected = collector.finish()
        else:
            collected = collect_body((await provider.send(request, _DEADLINES)).body)
        self.recorder.response(context, backend, collected)

    def _body(self) -> dict[str, Any]:
        stream = self.step % 2 == 0
        workload = self.scenario.workload
        words = " ".join(self.rng.choice(_WORDS) for _ in range(12))
        messages: list[dict[str, Any]] = [{"role": "user", "content": f"Tell me about {words}."}]
        body: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        if workload == "tools":
            body["tools"] = [_LOOKUP_TOOL]
        elif workload == "long":
            document = " ".join(self.rng.choice(_WORDS) for _ in range(3000))
            messages.insert(0, {"role": "system", "content": document})
        body["messages"] = messages
        return body


_LOOKUP_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query", "limit"],
        },
    },
}


def _backend(name: str) -> BackendView:
    return BackendView(name, "emulated", frozenset({MODEL}), True, 0, 64)

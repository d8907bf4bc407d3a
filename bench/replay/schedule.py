"""Replays a trace as a dependency graph: roots at `start`, children `after` their parent ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .trace import TraceRequest


@dataclass(slots=True)
class RequestResult:
    """What happened to one request; times are `time.perf_counter()` seconds.

    `first_token_at` is when the first SSE chunk carrying content or a tool call arrived
    (for a non-streamed request: when the whole response arrived).
    """

    request_id: str
    ok: bool
    sent_at: float
    done_at: float
    first_token_at: float | None = None
    status: int | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    """Prompt tokens written to a provider's cache (Anthropic's, billed apart)."""
    cache_write_1h_tokens: int | None = None
    backend: str | None = None
    decision_id: str | None = None
    due_at: float = 0.0
    timings: dict[str, Any] | None = None
    """The engine's own `timings` of the usage chunk (llama.cpp: prompt_n, cache_n, prompt_ms)."""
    error_code: str | None = None
    """The OpenAI-shaped error's `error.code` (`request_shed`, `queue_full`, ...)."""
    queue_ms: float | None = None
    """Wall ms the gateway held the request before dispatch (`x-switchyard-queue-ms`)."""
    admission: str | None = None
    """How the gateway admitted it (`x-switchyard-admission`: `queued`, `fallback`, ...)."""


class Transport(Protocol):
    """Sends one request and reports the outcome; request failures are results, not raises."""

    async def send(self, request: TraceRequest) -> RequestResult: ...


@dataclass(frozen=True, slots=True)
class ReplayRun:
    """Results in trace order (a request never sent has none) and the replay's clock."""

    results: tuple[RequestResult, ...]
    started_at: float
    finished_at: float
    time_scale: float


OnResult = Callable[[RequestResult], None]


class _Graph:
    """Launches each request when due; a finished request releases its children."""

    def __init__(
        self,
        children: Mapping[str, Sequence[TraceRequest]],
        transport: Transport,
        time_scale: float,
        on_result: OnResult | None,
        group: asyncio.TaskGroup,
        clock: Callable[[], float],
    ) -> None:
        self._children = children
        self._transport = transport
        self._scale = time_scale
        self._on_result = on_result
        self._group = group
        self._clock = clock
        self.results: dict[str, RequestResult] = {}

    def launch(self, request: TraceRequest, due_at: float) -> None:
        self._group.create_task(self._run(request, due_at), name=f"replay-{request.id}")

    async def _run(self, request: TraceRequest, due_at: float) -> None:
        delay = due_at - self._clock()
        if delay > 0:
            await asyncio.sleep(delay)
        result = await self._transport.send(request)
        result.due_at = due_at
        self.results[request.id] = result
        if self._on_result is not None:
            self._on_result(result)
        # Failed or not, the parent is over: its children go ahead so the graph completes.
        ended = self._clock()
        for child in self._children.get(request.id, ()):
            self.launch(child, ended + (child.after_s or 0.0) * self._scale)


async def replay(
    requests: Sequence[TraceRequest],
    transport: Transport,
    *,
    time_scale: float,
    on_result: OnResult | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> ReplayRun:
    """Send every request of `requests` (a dependency-closed set) and wait for all.
    `clock`: the one the transport's times are on."""
    included = {r.id for r in requests}
    children: dict[str, list[TraceRequest]] = {}
    for request in requests:
        if request.parent is not None and request.parent in included:
            children.setdefault(request.parent, []).append(request)
    started = clock()
    async with asyncio.TaskGroup() as group:
        graph = _Graph(children, transport, time_scale, on_result, group, clock)
        for request in requests:
            if request.start_s is not None:
                graph.launch(request, started + request.start_s * time_scale)
    finished = clock()
    ordered = tuple(graph.results[r.id] for r in requests if r.id in graph.results)
    return ReplayRun(ordered, started, finished, time_scale)

"""Targeted probes of suspects: the kind of request under suspicion, until the trial ends.

A suspect that the quality scorer ranks below its peers gets little traffic, and its
trial would starve. So every `suspect_interval_s` each suspect gets one probe shaped
like the requests its suspected signals judge: a tool-calling request for the tool-call
signals, an ordinary text answer for the others (loops, empty or odd output, errors).
Its answer goes through the passive signals like any response, so it is evidence for
the very signals on trial, at weight 1. Each probe counts against the backend's own
`suspect_max_tokens_per_hour`, apart from the regular cycle's budget.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import orjson

from gateway.process.tasks import cancel_and_wait, sleep_to_beat
from gateway.quality.book.peers import PEER_RELATIVE
from gateway.quality.book.quality_book import QualityBook
from gateway.quality.config import ProbeConfig, SignalParams
from gateway.quality.explain import label
from gateway.quality.probes.budget import ProbeBudget
from gateway.quality.signals.collect import collect_body
from gateway.quality.signals.observation import SignalEvent
from gateway.quality.signals.passive import QualityRecorder, request_context
from providers.base import Deadlines, Provider, UpstreamRequest
from providers.errors import UpstreamError

logger = logging.getLogger("switchyard")
TOOL_SIGNALS = frozenset(
    {"tool_call", "tool_call_json", "tool_call_name", "tool_call_schema", "finish_reason"}
)
_MAX_TOKENS = 64
_TOPICS = ("rivers", "stone bridges", "signal boxes", "train yards", "harbours", "orchards")
_LOOKUP_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a topic up in the library.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query", "limit"],
        },
    },
}


def probe_body(model: str, tools: bool, rng: random.Random) -> dict[str, Any]:
    """An ordinary request: a short question (with a tool to call, for tool suspects)."""
    topic = rng.choice(_TOPICS)
    ask = f"Tell me about {topic}, number {rng.randrange(10_000)}."
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": ask}],
        "max_tokens": _MAX_TOKENS,
        "stream": False,
    }
    if tools:
        body["tools"] = [_LOOKUP_TOOL]
    return body


class SuspectProber:
    """Probes the suspects among (backend, model) targets; see the module's docstring."""

    def __init__(
        self,
        configs: Mapping[str, ProbeConfig],
        book: QualityBook,
        providers: Mapping[str, Provider],
        targets: Sequence[tuple[str, str]],
        *,
        params: SignalParams | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._configs = configs
        self._book = book
        self._providers = providers
        self._targets = [(b, m) for b, m in targets if configs[b].suspect_probes]
        self._recorder = QualityRecorder(book, params)
        self._clock = clock
        self._rng = rng or random.Random()
        self._budgets = {b: ProbeBudget(configs[b].suspect_max_tokens_per_hour) for b in configs}
        self._due: dict[tuple[str, str], float] = {}
        self.probes = 0
        self.skipped = 0
        self._task: asyncio.Task[None] | None = None

    def start(self, gate: Callable[[], bool]) -> None:
        if self._targets:
            self._task = asyncio.create_task(self._forever(gate), name="quality-suspect-probes")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)

    async def run_once(self) -> int:
        """One probe for each suspect that is due; how many were sent."""
        now = self._clock()
        due = []
        for backend, model in self._targets:
            if self._book.view(backend, model).state != "suspect":
                self._due.pop((backend, model), None)
                continue
            if now >= self._due.get((backend, model), now):
                self._due[(backend, model)] = now + self._configs[backend].suspect_interval_s
                due.append((backend, model))
        sent = await asyncio.gather(*(self._probe(b, m) for b, m in due))
        return sum(sent)

    async def _forever(self, gate: Callable[[], bool]) -> None:
        tick = min(self._configs[b].suspect_interval_s for b, _ in self._targets)
        while True:
            await sleep_to_beat(tick)
            try:
                if gate():
                    await self.run_once()
            except Exception:  # a probe bug must not end probing for good
                logger.exception("quality suspect probes failed")

    async def _probe(self, backend: str, model: str) -> bool:
        tools = bool(TOOL_SIGNALS & set(self._book.on_trial(backend, model)))
        body = probe_body(model, tools, self._rng)
        raw = orjson.dumps(body)
        estimate = len(raw) // 4 + _MAX_TOKENS
        budget, now = self._budgets[backend], self._clock()
        if not budget.allows(now, estimate):
            self.skipped += 1
            return False
        budget.charge(now, estimate)
        self.probes += 1
        kind = "suspect probe (tools)" if tools else "suspect probe (text)"
        context = request_context(
            model,
            body,
            max_tokens=_MAX_TOKENS,
            prompt_tokens=None,
            ttft_target_ms=None,
            tpot_target_ms=None,
        )
        timeout = self._configs[backend].timeout_s
        deadlines = Deadlines(connect_s=timeout, first_byte_s=timeout, between_chunks_s=timeout)
        request = UpstreamRequest("/chat/completions", raw, False)
        events: list[SignalEvent] = []
        try:
            response = await self._providers[backend].send(request, deadlines)
        except UpstreamError as exc:
            code = exc.code or "error"
            record = partial(self._recorder.failure, context, backend, code)
        else:
            collected = collect_body(response.body)
            record = partial(self._recorder.response, context, backend, collected)
        self._recorder.guarded(lambda: events.extend(record()))
        # Signals judged against peers are not bad on their own (max_tokens hit).
        bad = [label(e.signal) for e in events if e.bad and e.signal not in PEER_RELATIVE]
        verdict = "bad: " + ", ".join(bad) if bad else "ok" if events else "no verdict"
        self._book.note_probe(backend, model, f"{kind}: {verdict}")
        return True

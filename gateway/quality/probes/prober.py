"""Active probes: a scheduled, budgeted cycle of canary, tool-call and needle requests.

Each cycle probes every (backend, model) pair a route serves, through the backend's own
provider adapter (not through routing). Results become `probe_*` evidence in the quality
book; a probe that fails with an upstream error is `error` evidence, a 429 is none, and a
refusal of the probe's context for its size is evidence against that probe. Every
probe's tokens count against the backend's hourly budget; a probe that would exceed it
is skipped, and counted as skipped.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.process.tasks import cancel_and_wait
from gateway.quality.book.quality_book import QualityBook
from gateway.quality.config import ProbeConfig
from gateway.quality.probes.budget import ProbeBudget
from gateway.quality.probes.canary import CANARY_PROMPTS, CanaryBaselines, canary_body, parse_canary
from gateway.quality.probes.kinds import (
    NEEDLE_MAX_TOKENS,
    Verdict,
    context_refusal,
    judge_needle,
    judge_tool_call,
    needle_probe,
    tool_call_body,
)
from gateway.quality.probes.suspects import SuspectProber
from gateway.quality.signals.observation import SignalEvent
from providers.base import Deadlines, Provider, UpstreamRequest
from providers.errors import UpstreamError, UpstreamStatusError

logger = logging.getLogger("switchyard")
_RESULTS_KEPT = 64


@dataclass(frozen=True, slots=True)
class ProbeResult:
    backend: str
    model: str
    kind: str
    """canary, tool_call, needle"""
    ok: bool | None
    """None: no verdict (skipped, or the backend was rate limited)."""
    detail: str
    tokens: int
    at: float
    latency_s: float
    drift: float | None = None
    """The canary's drift from its reference (total variation of top logprobs)."""


class Prober:
    """Probes (backend, model) targets; each backend with its own `ProbeConfig`."""

    def __init__(
        self,
        configs: Mapping[str, ProbeConfig],
        book: QualityBook,
        providers: Mapping[str, Provider],
        targets: Iterable[tuple[str, str]],
        *,
        drift_threshold: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.configs = configs
        self._book = book
        self._providers = providers
        self.targets = sorted((b, m) for b, m in set(targets) if configs[b].enabled)
        self._clock = clock
        self._rng = rng or random.Random()
        self._budgets = {b: ProbeBudget(configs[b].max_tokens_per_hour) for b, _ in self.targets}
        threshold = drift_threshold
        if threshold is None:
            threshold = min((c.drift_threshold for c in configs.values()), default=0.15)
        self.baselines = CanaryBaselines(threshold)
        self.results: deque[ProbeResult] = deque(maxlen=_RESULTS_KEPT * max(1, len(self.targets)))
        self.cycles = 0
        self.probes = 0
        self.kept = 0
        """Results kept so far: readers take the newest `kept - seen` of `results`."""
        self.skipped = 0
        self.tokens = 0
        self.gate: Callable[[], bool] = _always
        """Asked before each scheduled cycle: false skips it (another replica of the fleet
        holds the probe lease and shares what its probes find)."""
        self._tasks: list[asyncio.Task[None]] = []
        self.suspects = SuspectProber(
            configs, book, providers, self.targets, clock=clock, rng=self._rng
        )
        """Targeted probes of suspects until their trial concludes (suspects.py)."""

    def start(self) -> None:
        """One loop per backend, each at its own interval."""
        for backend in sorted({b for b, _ in self.targets}):
            task = asyncio.create_task(self._forever(backend), name=f"quality-probes-{backend}")
            self._tasks.append(task)
        self.suspects.start(lambda: self.gate())

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks)
        await self.suspects.stop()

    async def run_cycle(self, backends: Iterable[str] | None = None) -> list[ProbeResult]:
        """Probe every target (of `backends`) once: targets concurrently, a target's
        probes in turn."""
        wanted = set(backends) if backends is not None else None
        pairs = [(b, m) for b, m in self.targets if wanted is None or b in wanted]
        batches = await asyncio.gather(
            *(self._probe_pair(b, m) for b, m in pairs), return_exceptions=True
        )
        self.cycles += 1
        results: list[ProbeResult] = []
        for batch in batches:
            if isinstance(batch, BaseException):
                if not isinstance(batch, Exception):
                    raise batch  # cancellation and the like are not a probe's business
                logger.warning("quality probe failed", exc_info=batch)
                continue
            results.extend(batch)
        return results

    def status(self) -> dict[str, Any]:
        now = self._clock()
        return {
            "cycles": self.cycles,
            "probes": self.probes,
            "skipped_over_budget": self.skipped,
            "tokens": self.tokens,
            "suspect_probes": self.suspects.probes,
            "suspect_probes_skipped_over_budget": self.suspects.skipped,
            "backends": {
                backend: {
                    "interval_s": self.configs[backend].interval_s,
                    "budget_tokens_per_hour": budget.per_hour,
                    "spent_last_hour": budget.spent(now),
                }
                for backend, budget in self._budgets.items()
            },
        }

    async def _forever(self, backend: str) -> None:
        # The first cycle comes at a random point of the first interval, so that probes
        # of many backends (and of several gateways) do not all land at once.
        await asyncio.sleep(self.configs[backend].interval_s * self._rng.uniform(0.1, 1.0))
        while True:
            try:
                if self.gate():
                    await self.run_cycle([backend])
            except Exception:  # a probe bug must not end probing for good
                logger.exception("quality probe cycle failed on %s", backend)
            await asyncio.sleep(self.configs[backend].interval_s)

    async def _probe_pair(self, backend: str, model: str) -> list[ProbeResult]:
        cfg = self.configs[backend]
        results: list[ProbeResult] = []
        if cfg.canary:
            for index, prompt in enumerate(CANARY_PROMPTS):
                results.append(await self._canary(backend, model, index, prompt))
        if cfg.tool_call:
            results.append(await self._tool_call(backend, model))
        if cfg.needle:
            results.append(await self._needle(backend, model))
        return results

    async def _canary(self, backend: str, model: str, index: int, prompt: str) -> ProbeResult:
        def judge(response: Any) -> Verdict:
            answer = parse_canary(response)
            if answer is None:
                return Verdict("no first token in the answer")
            drift = self.baselines.judge(model, index, backend, answer)
            if drift > self.configs[backend].drift_threshold:
                variant = "top-5 logprobs" if answer.top is not None else "first token"
                problem = f"canary {index + 1}: {variant} drifted {drift:.2f} from the baseline"
                return Verdict(problem, drift=drift)
            return Verdict(drift=drift)

        body = canary_body(model, prompt)
        return await self._run(backend, model, "canary", body, 1, "probe_logprob", judge)

    async def _tool_call(self, backend: str, model: str) -> ProbeResult:
        body = tool_call_body(model)
        signal = "probe_tool_call"

        def judge(response: Any) -> Verdict:
            return Verdict(judge_tool_call(response))

        return await self._run(backend, model, "tool_call", body, 64, signal, judge)

    async def _needle(self, backend: str, model: str) -> ProbeResult:
        needle = needle_probe(model, self.configs[backend].needle_tokens, self._rng)

        def judge(response: Any) -> Verdict:
            return judge_needle(needle, response)

        body, signal = needle.body, "probe_needle"
        return await self._run(backend, model, "needle", body, NEEDLE_MAX_TOKENS, signal, judge)

    async def _run(
        self,
        backend: str,
        model: str,
        kind: str,
        body: dict[str, Any],
        max_tokens: int,
        signal: str,
        judge: Callable[[Any], Verdict],
    ) -> ProbeResult:
        raw = orjson.dumps(body)
        started = self._clock()
        estimate = len(raw) // 4 + max_tokens
        budget = self._budgets[backend]
        if not budget.allows(started, estimate):
            self.skipped += 1
            return self._keep(ProbeResult(backend, model, kind, None, "over budget", 0, started, 0))
        # Reserved before the request: concurrent probes of one backend see each other.
        budget.charge(started, estimate)
        self.probes += 1
        try:
            response = await self._send(backend, raw)
        except UpstreamError as exc:
            refused = _refused_for_size(exc)
            if refused is None:
                return self._keep(self._failed(backend, model, kind, exc, started))
            return self._conclude(backend, model, kind, signal, Verdict(refused), 0, started)
        tokens = _tokens_used(response) or estimate
        budget.charge(started, tokens - estimate)  # settle against what it really cost
        self.tokens += tokens
        try:
            verdict = judge(response)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            verdict = Verdict(f"unparseable answer ({type(exc).__name__})")
        return self._conclude(backend, model, kind, signal, verdict, tokens, started)

    def _conclude(
        self,
        backend: str,
        model: str,
        kind: str,
        signal: str,
        verdict: Verdict,
        tokens: int,
        started: float,
    ) -> ProbeResult:
        """The verdict as evidence in the book (unless it proves nothing) and as a result."""
        ok = None if not verdict.evidence else verdict.problem is None
        detail = verdict.problem or "ok"
        if verdict.evidence:
            weight = self.configs[backend].weight
            event = SignalEvent(signal, not ok, "fidelity", detail, weight=weight)
            self._book.record(backend, model, [event])
        latency = self._clock() - started
        result = ProbeResult(
            backend, model, kind, ok, detail, tokens, started, latency, drift=verdict.drift
        )
        self._book.note_probe(backend, model, f"{kind}: {detail}")
        return self._keep(result)

    async def _send(self, backend: str, raw: bytes) -> Any:
        timeout = self.configs[backend].timeout_s
        deadlines = Deadlines(connect_s=timeout, first_byte_s=timeout, between_chunks_s=timeout)
        request = UpstreamRequest("/chat/completions", raw, False)
        response = await self._providers[backend].send(request, deadlines)
        try:
            return orjson.loads(response.body)
        except orjson.JSONDecodeError:
            return None

    def _failed(
        self, backend: str, model: str, kind: str, exc: UpstreamError, started: float
    ) -> ProbeResult:
        latency = self._clock() - started
        if isinstance(exc, UpstreamStatusError) and exc.upstream_status == 429:
            return ProbeResult(backend, model, kind, None, "rate limited", 0, started, latency)
        if isinstance(exc, UpstreamStatusError) and exc.upstream_status < 500:
            # The probe itself was refused (e.g. no logprobs, no tools): not the model's fault.
            detail = f"probe refused: {exc.code}"
            return ProbeResult(backend, model, kind, None, detail, 0, started, latency)
        detail = f"probe failed: {exc.code or 'error'}"
        self._book.record(backend, model, [SignalEvent("error", True, "fidelity", detail)])
        self._book.note_probe(backend, model, f"{kind}: {detail}")
        return ProbeResult(backend, model, kind, False, detail, 0, started, latency)

    def _keep(self, result: ProbeResult) -> ProbeResult:
        self.results.append(result)
        self.kept += 1
        return result


def _always() -> bool:
    return True


def _refused_for_size(exc: UpstreamError) -> str | None:
    """A probe turned away for its context's size: the backend holds less than it is asked."""
    if not isinstance(exc, UpstreamStatusError):
        return None
    return context_refusal(exc.upstream_status, exc.upstream_body)


def _tokens_used(response: Any) -> int:
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return 0
    counts = (usage.get("prompt_tokens"), usage.get("completion_tokens"))
    return sum(count for count in counts if isinstance(count, int) and count > 0)

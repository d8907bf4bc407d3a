"""Mutable state of one emulator instance: faults, counters and, if batched, the engine."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from emulator.content.answer_length import AnswerLengths
from emulator.engine.kv_cache import KVCache
from emulator.engine.metrics import EngineCounters, EngineSnapshot
from emulator.engine.prompt_blocks import PromptHasher
from emulator.engine.scheduler import BatchParams, BatchScheduler, StepClock
from emulator.engine.timing import LinearTiming, TimingModel
from emulator.fault_injection import FaultInjector
from emulator.provider_cache import ProviderPromptCache
from emulator.rate_limits import RateLimiter
from emulator.settings import EmulatorSettings, Faults


@dataclass(slots=True)
class EmulatorStats:
    """Inference requests seen; ``cancelled`` counts clients that left mid-response.

    ``anthropic_betas`` counts, per ``anthropic-beta`` name, the requests that reached the
    engine with it; ``anthropic_version`` is the last ``anthropic-version`` one carried.
    """

    received: int = 0
    completed: int = 0
    cancelled: int = 0
    failed: int = 0
    in_flight: int = 0
    anthropic_betas: dict[str, int] = field(default_factory=dict)
    anthropic_version: str | None = None

    def saw_client(self, version: str, betas: Iterable[str]) -> None:
        self.anthropic_version = version
        for beta in betas:
            self.anthropic_betas[beta] = self.anthropic_betas.get(beta, 0) + 1


class BatchedEngine:
    """The batched cost model's parts: prompt hashing, the KV cache and the scheduler."""

    def __init__(
        self, settings: EmulatorSettings, counters: EngineCounters, clock: StepClock | None
    ) -> None:
        self.hasher = PromptHasher(settings.block_tokens, settings.bytes_per_token)
        self.cache = KVCache(settings.kv_capacity_tokens // settings.block_tokens)
        self.scheduler = BatchScheduler(
            BatchParams.from_settings(settings), self.cache, counters, clock
        )


class EmulatorRuntime:
    """Everything an emulator app reads or changes while serving; one per app, never global.

    ``engine`` is set for ``cost_model="batched"``; embeddings keep the linear timing.
    """

    def __init__(
        self,
        settings: EmulatorSettings,
        timing: TimingModel | None = None,
        clock: StepClock | None = None,
    ) -> None:
        self.settings = settings
        self.timing: TimingModel = timing or LinearTiming.from_settings(settings)
        # A copy: the settings stay frozen while PUT /emulator/faults replaces this.
        self.injector = FaultInjector(settings.faults.model_copy())
        self.lengths = AnswerLengths(
            settings.output_tokens_mean, settings.output_tokens_sigma, settings.ignore_eos
        )
        self.stats = EmulatorStats()
        self.counters = EngineCounters()
        self.limiter = RateLimiter(
            settings.rate_limit_requests_per_minute, settings.rate_limit_tokens_per_minute
        )
        cache = settings.prompt_cache
        self.prompt_cache = ProviderPromptCache(cache) if cache is not None else None
        self.engine: BatchedEngine | None = None
        if settings.cost_model == "batched":
            self.engine = BatchedEngine(settings, self.counters, clock)

    @property
    def faults(self) -> Faults:
        return self.injector.faults

    @faults.setter
    def faults(self, faults: Faults) -> None:
        """Replacing the faults re-seeds their random draws."""
        self.injector.replace(faults)

    def take_failure(self) -> int | None:
        """Status to fail the next request with: ``fail_status`` or an error burst."""
        return self.injector.take_failure()

    def snapshot(self) -> EngineSnapshot:
        """Engine numbers now; a linear engine reports requests in flight as running."""
        model = self.settings.models[0]
        if self.engine is not None:
            return self.engine.scheduler.snapshot(model)
        return EngineSnapshot(model, self.stats.in_flight, 0, 0.0, 0.0, replace(self.counters))

    async def aclose(self) -> None:
        """Stop the engine loop, if any; responses still waiting on it are cancelled."""
        if self.engine is not None:
            await self.engine.scheduler.stop()

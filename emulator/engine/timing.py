"""Linear timing of the emulated engine: when the first token and each later token are due.

The default cost model, and the one embeddings always use. The batched cost model (KV
cache, continuous batching) is ``scheduler.py``; ``emulator/timeline.py`` picks between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from emulator.settings import EmulatorSettings


class TimingModel(Protocol):
    """Delays, in seconds, already multiplied by the time scale."""

    def first_token_delay_s(self, prompt_tokens: int) -> float:
        """Time from request arrival to the first output token (prefill)."""
        ...

    def token_delay_s(self) -> float:
        """Time between two consecutive output tokens of one sequence (decode)."""
        ...


@dataclass(frozen=True, slots=True)
class LinearTiming:
    """Prefill linear in prompt length plus a fixed decode step; no batching or caching."""

    base_latency_ms: float
    prefill_ms_per_1k_tokens: float
    token_delay_ms: float
    time_scale: float

    @classmethod
    def from_settings(cls, settings: EmulatorSettings) -> LinearTiming:
        return cls(
            base_latency_ms=settings.base_latency_ms,
            prefill_ms_per_1k_tokens=settings.prefill_ms_per_1k_tokens,
            token_delay_ms=settings.token_delay_ms,
            time_scale=settings.time_scale,
        )

    def first_token_delay_s(self, prompt_tokens: int) -> float:
        prefill_ms = self.prefill_ms_per_1k_tokens * prompt_tokens / 1000
        return (self.base_latency_ms + prefill_ms) * self.time_scale / 1000

    def token_delay_s(self) -> float:
        return self.token_delay_ms * self.time_scale / 1000

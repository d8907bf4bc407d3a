"""Online per-backend speed estimates learned from passing traffic.

Each estimate starts at a configured prior and moves by an exponentially weighted average
of observations. Prefill speed is learned from the time to first byte of streams that
found the backend's prefill queue empty, so queueing time is not mistaken for a slow
engine; once the engine itself reports its prefill time (llama-server's
`timings.prompt_ms`), only that is learned from: it has no network or queueing in it.
"""

from __future__ import annotations

from dataclasses import dataclass

_ALPHA = 0.2
_MIN_UNCACHED_TOKENS = 256
"""Below this, TTFT is mostly overhead and says little about prefill speed."""


@dataclass(slots=True)
class BackendEstimates:
    prefill_tokens_per_s: float
    tpot_ms: float
    network_ms: float = 0.0
    ttft_samples: int = 0
    tpot_samples: int = 0
    engine_prefill_samples: int = 0
    """Prefill times the engine reported; from the first, TTFT no longer moves the speed."""
    ttft_error_ms: float = 0.0
    """Recent mean of a stream's measured TTFT less the TTFT predicted when it was sent:
    what the latency model misses here (queueing inside the engine, waits for KV)."""
    ttft_error_samples: int = 0

    def observe_ttft(self, ttft_s: float, uncached_tokens: int, queue_was_empty: bool) -> None:
        """A stream's first byte arrived `ttft_s` after dispatch."""
        if ttft_s <= 0 or not queue_was_empty:
            return
        self.ttft_samples += 1
        if uncached_tokens < _MIN_UNCACHED_TOKENS:
            self.network_ms = ewma(self.network_ms, ttft_s * 1000.0)
            return
        if self.engine_prefill_samples:
            return
        prefill_s = max(ttft_s - self.network_ms / 1000.0, 1e-4)
        self.prefill_tokens_per_s = ewma(self.prefill_tokens_per_s, uncached_tokens / prefill_s)

    def observe_engine_prefill(self, prefill_s: float, uncached_tokens: int) -> None:
        """The engine computed `uncached_tokens` prompt tokens in `prefill_s`, by its own
        clock (streamed or not, queued or not)."""
        if prefill_s <= 0 or uncached_tokens < _MIN_UNCACHED_TOKENS:
            return
        self.engine_prefill_samples += 1
        self.prefill_tokens_per_s = ewma(self.prefill_tokens_per_s, uncached_tokens / prefill_s)

    def observe_ttft_error(self, measured_ms: float, predicted_ms: float) -> None:
        """A stream's first byte came `measured_ms` after dispatch; `predicted_ms` was
        expected."""
        self.ttft_error_samples += 1
        self.ttft_error_ms = ewma(self.ttft_error_ms, measured_ms - predicted_ms)

    def observe_tpot(self, decode_s: float, completion_tokens: int) -> None:
        """A stream produced `completion_tokens` in `decode_s` after its first byte."""
        if completion_tokens < 2 or decode_s <= 0:
            return
        self.tpot_samples += 1
        self.tpot_ms = ewma(self.tpot_ms, decode_s * 1000.0 / (completion_tokens - 1))


def ewma(current: float, sample: float) -> float:
    """`current` moved a fifth of the way towards `sample`."""
    return current + _ALPHA * (sample - current)

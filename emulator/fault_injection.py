"""Which faults hit a request: one seeded random generator per engine draws them all.

Draws happen in a fixed order per request, and only for rates above zero, so a seed
replays the same faults for the same sequence of requests.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from emulator.content.tool_faults import TOOL_FAULT_KINDS, ToolFault
from emulator.request_parsing import GenerationRequest
from emulator.settings import Faults


@dataclass(slots=True)
class FaultCounters:
    """Faults injected since start; ``burst_failures`` counts requests, ``error_bursts`` bursts."""

    error_bursts: int = 0
    burst_failures: int = 0
    latency_spikes: int = 0
    loops: int = 0
    malformed_tool_calls: int = 0
    cut_streams: int = 0
    truncated_prompts: int = 0
    substituted: int = 0
    flap_failures: int = 0

    def as_stats(self) -> dict[str, int]:
        """Flat numbers for ``GET /emulator/stats``, each prefixed ``injected_``."""
        return {f"injected_{name}": value for name, value in asdict(self).items()}


@dataclass(frozen=True, slots=True)
class RequestFaults:
    """The faults one generation request gets."""

    loop: bool = False
    tool_fault: ToolFault | None = None
    substitute: bool = False
    cut_after_chunks: int | None = None  # streams: data chunks sent before the cut


class FaultInjector:
    """The engine's faults, its random generator and the state of an error burst."""

    def __init__(self, faults: Faults) -> None:
        self.counters = FaultCounters()
        self._faults = faults
        self._rng = random.Random(faults.seed)
        self._burst_left = 0
        self._flap_seen = 0

    @property
    def faults(self) -> Faults:
        return self._faults

    def replace(self, faults: Faults) -> None:
        """New faults: the generator is re-seeded, a burst in progress ends, a flap starts over."""
        self._faults = faults
        self._rng = random.Random(faults.seed)
        self._burst_left = 0
        self._flap_seen = 0

    def take_failure(self) -> int | None:
        """Status to fail the next inference request with: ``fail_status``, else a flap's
        down phase, else a burst."""
        faults = self._faults
        if faults.fail_status is not None and faults.fail_count != 0:
            if faults.fail_count > 0:
                faults.fail_count -= 1
            return faults.fail_status
        if self._flap_down():
            self.counters.flap_failures += 1
            return faults.flap_status
        if self._burst_left == 0:
            if not self._fires(faults.error_burst_rate):
                return None
            self._burst_left = faults.error_burst_length
            self.counters.error_bursts += 1
        self._burst_left -= 1
        self.counters.burst_failures += 1
        return faults.error_burst_status

    def _flap_down(self) -> bool:
        """Whether this request falls in a flap's down phase (counting it either way)."""
        period = self._faults.flap_requests
        if period is None:
            return False
        seen, self._flap_seen = self._flap_seen, self._flap_seen + 1
        return (seen // period) % 2 == 0

    def latency_spike_s(self, time_scale: float) -> float:
        """Extra wait before the first byte of this response, already scaled."""
        if not self._fires(self._faults.latency_spike_rate):
            return 0.0
        self.counters.latency_spikes += 1
        return self._faults.latency_spike_s * time_scale

    def roll(self, generation: GenerationRequest) -> RequestFaults:
        """The content and stream faults of one chat or completion request."""
        faults = self._faults
        counters = self.counters
        loop, tool_fault = False, None
        if generation.tool is None:
            loop = self._fires(faults.loop_rate)
            counters.loops += loop
        elif self._fires(faults.malformed_tool_call_rate):
            rng = self._rng
            tool_fault = ToolFault(rng.choice(TOOL_FAULT_KINDS), rng.getrandbits(32))
            counters.malformed_tool_calls += 1
        cut = self._stream_cut() if generation.sampling.stream else None
        counters.cut_streams += cut is not None
        counters.substituted += faults.substitute_model
        return RequestFaults(loop, tool_fault, faults.substitute_model, cut)

    def _stream_cut(self) -> int | None:
        faults = self._faults
        if faults.cut_stream_rate is None:
            return faults.cut_stream_after_chunks
        if not self._fires(faults.cut_stream_rate):
            return None
        return 1 if faults.cut_stream_after_chunks is None else faults.cut_stream_after_chunks

    def _fires(self, rate: float) -> bool:
        # A zero rate draws nothing: a seeded run's draws depend only on the faults it sets.
        return rate > 0 and self._rng.random() < rate

"""Mutable state of one emulator instance: current faults and request counters."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.emulator.settings import EmulatorSettings, Faults
from gateway.emulator.timing import LinearTiming, TimingModel


@dataclass(slots=True)
class EmulatorStats:
    """Inference requests seen; ``cancelled`` counts clients that left mid-response."""

    received: int = 0
    completed: int = 0
    cancelled: int = 0
    failed: int = 0
    in_flight: int = 0


class EmulatorRuntime:
    """Everything an emulator app reads or changes while serving; one per app, never global."""

    def __init__(self, settings: EmulatorSettings, timing: TimingModel | None = None) -> None:
        self.settings = settings
        self.timing: TimingModel = timing or LinearTiming.from_settings(settings)
        # A copy: the settings stay frozen while PUT /emulator/faults replaces this.
        self.faults: Faults = settings.faults.model_copy()
        self.stats = EmulatorStats()

    def take_failure(self) -> int | None:
        """Status to fail the next request with, consuming one of ``fail_count``."""
        faults = self.faults
        if faults.fail_status is None or faults.fail_count == 0:
            return None
        if faults.fail_count > 0:
            faults.fail_count -= 1
        return faults.fail_status

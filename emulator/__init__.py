"""Emulated OpenAI-compatible inference engine for tests, embedded mode and benchmarks."""

from emulator.app import create_app
from emulator.fleet import EmulatorFleet
from emulator.metrics import EngineSnapshot
from emulator.runtime_state import EmulatorRuntime, EmulatorStats
from emulator.server import EmulatorServer
from emulator.settings import EmulatorOptions, EmulatorSettings, Faults
from emulator.timing import LinearTiming, TimingModel

__all__ = [
    "EmulatorFleet",
    "EmulatorOptions",
    "EmulatorRuntime",
    "EmulatorServer",
    "EmulatorSettings",
    "EmulatorStats",
    "EngineSnapshot",
    "Faults",
    "LinearTiming",
    "TimingModel",
    "create_app",
]

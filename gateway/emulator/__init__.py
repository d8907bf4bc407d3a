"""Emulated OpenAI-compatible inference engine for tests, embedded mode and benchmarks."""

from gateway.emulator.app import create_app
from gateway.emulator.fleet import EmulatorFleet
from gateway.emulator.metrics import EngineSnapshot
from gateway.emulator.runtime_state import EmulatorRuntime, EmulatorStats
from gateway.emulator.server import EmulatorServer
from gateway.emulator.settings import EmulatorSettings, Faults
from gateway.emulator.timing import LinearTiming, TimingModel

__all__ = [
    "EmulatorFleet",
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

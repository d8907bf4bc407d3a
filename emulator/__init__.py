"""Emulated OpenAI-compatible inference engine for tests, embedded mode and benchmarks.

Nothing is imported here: a config that names an emulated backend loads what it starts
(`emulator.server`), and a gateway without one loads no emulator module at all.
"""

"""Benchmarks: scripts that measure Switchyard against its engines and alternatives."""

"""Workload matrix benchmark: every cell of bench/workloads' catalog through every policy.

`switchyard bench matrix` (also `python -m bench.matrix`); docs/replay.md, "Workload matrix".
"""

from .cli import add_arguments, main, run

__all__ = ["add_arguments", "main", "run"]

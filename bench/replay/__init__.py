"""Trace replay benchmark: replays a workload trace through routing policies and compares them."""

from .cli import add_arguments, main, run

__all__ = ["add_arguments", "main", "run"]

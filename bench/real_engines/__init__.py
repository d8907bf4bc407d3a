"""Real-engine replay: a multi-turn chat trace through routing policies on llama.cpp replicas."""

from .cli import add_arguments, main, run

__all__ = ["add_arguments", "main", "run"]

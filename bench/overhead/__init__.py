"""`switchyard bench overhead` (also `python -m bench.overhead`): direct vs Switchyard vs
LiteLLM's proxy against the same emulated engines (docs/benchmarks.md, "Gateway overhead").

`cli.py` starts the servers and prints the tables; `phases.py` runs the warm-up and the
phases, targets taking turns; `report.py` turns samples into metrics and verdicts.
"""

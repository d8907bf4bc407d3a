"""`switchyard bench decision` (also `python -m bench.decision`): routing decision time on
the cache-aware profile, 16 backends, 8K and 128K-token prompts (docs/benchmarks.md).

`cli.py` times the cases; `workload.py` builds the prompts and the fleet; `report.py` holds
the samples, their percentiles and the tables.
"""

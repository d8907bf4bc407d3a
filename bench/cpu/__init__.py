"""`switchyard bench cpu` (also `python -m bench.cpu`): gateway CPU per request and per SSE
chunk with the defaults on, and what each part costs (docs/benchmarks.md, "CPU per request").

`cli.py` runs the live variants and the floors; `turns.py` is the measuring turn it shares
with `bench.ab_trees`; `parts.py` and `chunk_path.py` time the request path's parts and the
spliced chunk path in-process; `floor_pipe.py` and `floor_relay.py` are the floors it
starts as servers of their own (`python -m bench.cpu.floor_pipe PORT UPSTREAM_PORT`).
"""

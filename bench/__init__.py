"""Benchmarks: scripts that measure Switchyard against its engines and alternatives.

Each `switchyard bench NAME` with more than one module is a package here, its entry in
`NAME/cli.py` (also `python -m bench.NAME`): replay/, matrix/, cpu/, decision/, overhead/,
quality/, quality_real/, real_engines/, resilience/ (hold, soak, kill-backend,
store-outage, slow-clients). At the top level: the harness they share (load.py, the load generator;
procs.py, servers as subprocesses; targets.py, the engines and gateways under test;
tables.py) and the single-module tools (telemetry_cost.py is `switchyard bench telemetry`;
ab_trees.py and footprint.py compare checkouts). workloads/ generates traces; studies/
holds one-off measurements a doc quotes; results/ the raw outputs the docs cite.
"""

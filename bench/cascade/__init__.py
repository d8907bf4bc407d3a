"""`switchyard bench cascade`: a cascade (a real llama.cpp small tier, an emulated strong
cloud tier) against always-small and always-strong on seeded workloads with ground truth:
`fleet.py` starts the tiers and the gateway, `drive.py` sends the requests and keeps what
each cost, `analysis.py` sums them up (and the log-probability check's AUROC and curve),
`report.py` writes the tables, `cli.py` the command."""

"""Active quality probes: what each kind sends and how its answer is judged (`kinds.py`,
`canary.py`), the scheduled, budgeted prober (`prober.py`, `budget.py`) and targeted probes
of suspects (`suspects.py`).

May import `gateway.quality.book`, `gateway.quality.signals`, `gateway.quality.config`,
`gateway.fleet`'s back-off and probe lease, `gateway.process.tasks` and `providers`.
"""

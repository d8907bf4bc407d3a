"""Spend limits: checked at admission (`spend_limits.py`), counted off the request path
in-process or in Redis (`ledger.py`, `redis_counters.py`), per UTC day and month
(`windows.py`), exposed as metrics (`metrics.py`).

May import `gateway.tenancy`'s config and caller, `gateway.errors` and
`gateway.process.tasks`.
"""

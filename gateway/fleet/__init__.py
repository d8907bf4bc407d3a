"""The fleet: live per-backend state, health detection, speed estimates, engine scrapes, and
sharing load and prefix inserts with other replicas through Redis.

May import `gateway.config.root`, `gateway.config.backends`, `gateway.prefix` (the index the
Redis sync feeds), `gateway.process.tasks`, `policies` (the views policies read) and
`providers`; never `gateway.http`, `gateway.telemetry` or `gateway.store`.
"""

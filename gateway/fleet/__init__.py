"""The fleet: live per-backend state, health detection, speed estimates, engine scrapes,
and sharing load and prefix inserts with other replicas through Redis.

May import `gateway.config`, `gateway.backend_config`, `gateway.prefix` (the index the
Redis sync feeds), `gateway.tasks`, `policies` (the views policies read) and `providers`; never
`gateway.http`, `gateway.telemetry` or `gateway.store`.
"""

"""Tenancy: who a client is (static and virtual keys, the admin and metrics tokens) and
how much it may ask (RPM / TPM limits per key and per route, through Redis or in-process;
spend budgets in `budgets/`).

Keys are checked against an in-memory cache (`key_cache.py`) that a background task
refreshes from the store; limits are admitted by `limiter.py`. Nothing here waits on the
database on the request path; the limiter's one Redis round trip is bounded.

May import `gateway.config`, `gateway.errors`, `gateway.store` (virtual keys; imported when
the config enables them) and `gateway.process.tasks`; never routing, the fleet, quality,
the prefix index or telemetry: who may call is decided before routing.
"""

"""Prompt prefixes: token counts, block fingerprints, the bounded prefix index of what each
backend is predicted to hold, and what learns it from engine reports.

May import `gateway.config` and `gateway.backend_config` only (and the standard library,
tokenisers, `policies`' value types); the router and the fleet build on it.
"""

"""Prompt prefixes: token counts, block fingerprints, the bounded prefix index of what each
backend is predicted to hold, and a request's `PromptWork`. The router inserts and
corrects entries (what engines report reaches it through the dispatcher's leases).

May import `gateway.config` and `gateway.backend_config` only (and the standard library,
tokenisers, `policies`' value types); the router and the fleet build on it.
"""

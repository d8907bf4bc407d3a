"""Prompt prefixes: token counts, block fingerprints, the bounded prefix index of what each
backend is predicted to hold (by its cache rules: an engine's or a provider's prompt
cache), cache breakpoints for explicit-caching providers, and a request's `PromptWork`.
The router inserts and corrects entries (what backends report reaches it through the
dispatcher's leases).

May import `gateway.config.root` and `gateway.config.backends` only (and the standard library,
tokenisers, `policies`', `providers`' and `emulator`'s value types); the router and the
fleet build on it.
"""

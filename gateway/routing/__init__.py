"""The request's way through the gateway: the router (`router.py`: route lookup, placement,
snapshot, decision, a request's `RoutePlan`), dispatch over the ranked candidates
(`dispatch.py`) with one `Lease` per attempt (`lease.py`: the only code that changes a
backend's state on the request path), the decisions ring (`decisions.py`) and the dry run
(`explain.py`).

May import `gateway.config`, `gateway.fleet`, `gateway.prefix`, `gateway.quality`,
`gateway.process.tasks`, `policies` and `providers`; never `gateway.http` or the process
(`explain.py`'s dry run reads a request with the HTTP edge's wire parsing, lazily).
"""

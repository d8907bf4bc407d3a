"""OpenTelemetry traces of proxied requests, off by default and free when off: the
section's settings (`config.py`, no OpenTelemetry), the SDK's set-up and shutdown
(`setup.py`: the SDK imported only when tracing is on) and one request's spans
(`spans.py`: a server span, the routing decision's, a client span per upstream attempt).

May import `gateway.config`'s strict base, `gateway.errors`, `gateway.routing`'s decision
records, and `providers`' value types; the SDK (the `tracing` extra) only in `spans.py`,
which the rest of the gateway imports only when tracing is on.
"""

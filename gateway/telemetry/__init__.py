"""What the gateway tells operators: request records and their cost, the telemetry thread,
the access log, Prometheus metrics, dashboard series and page, and the spend sink.

May import `gateway.config`, `gateway.fleet`, `gateway.quality`, `gateway.routing`
(decision records), `gateway.tenancy`'s team labels, `gateway.process.tasks`, and
`gateway.store` only when the config turns the store on (imported then).
"""

"""What the gateway tells operators: request records and their cost, the telemetry thread,
the access log, Prometheus metrics (gauges only for the serving config's backends and
routes: `serving_series.py`; several workers' files: `worker_files.py`), dashboard series
and page, the spend sink, and the gateway's own refusals (counted, and logged and kept
within bounds).

May import `gateway.config`, `gateway.fleet`, `gateway.quality`, `gateway.routing`
(decision records), `gateway.tenancy`'s team labels and token-bucket arithmetic,
`gateway.process.tasks`, and `gateway.store` only when the config turns the store on
(imported then).
"""

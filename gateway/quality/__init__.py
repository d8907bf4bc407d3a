"""Live quality scores per backend and model: passive signals (`signals/`), active probes
(`probes/`), the quality book and its verdicts (`book/`); the views policies read
(`lazy_views.py`), the report for the API, and the channel that shares ejections with peer
replicas (`shared.py`).

May import `gateway.config`, `gateway.fleet`'s back-off and sync, `gateway.process.tasks`,
`policies`' view types and `providers`; never the router, telemetry or the HTTP edge.
"""

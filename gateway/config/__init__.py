"""The YAML schema of a gateway config and its loading: the root document (`root.py`),
backends (`backends.py`) with their `cache` blocks (`cache.py`), their engine polls
(`engine_polls.py`: `metrics`, `llama_cpp`) and their keys as the environment holds them
(`credentials.py`), routes (`routes.py`), the request `bounds` (`bounds.py`), client
connections' bounds (`clients.py`: `server.clients`), placement tags (`placement.py`), and
the strict base every section builds on (`strict.py`).

May import the schemas that other rooms own for their own sections (`gateway.fleet`'s none,
`gateway.quality.config`, `gateway.discovery.config`, `gateway.store.config`,
`gateway.telemetry.config`, `gateway.tenancy.config`, `gateway.prefix.cache_semantics`),
`policies`' config and price types and `providers`' settings; never the request path, the
process or the HTTP edge.
"""

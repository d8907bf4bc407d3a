"""Flow control: when a request goes, as routing decides where.

Owns the admission queue of each route (`queue.py`, `controller.py`), the priority
classes and tenants of requests (`classes.py`), the tenants' decayed service
(`ledger.py`), what it takes for a backend to have room for one request (`room.py`) and
the `flow_control` config section (`config.py`). Saturation is detected in the fleet
room (`gateway.fleet.saturation`); this room acts on it: admit, hold, shed or move to a
fallback route. The order of a queue is a plugin family of `policies.order`.

May import the config schema, the fleet's state and saturation detector, the router
(it re-decides a request it releases), the tenancy's `Caller`, the error tree,
`policies` and `gateway.process.tasks`; never the HTTP edge or the process.
"""

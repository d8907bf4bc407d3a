"""Replicas that route as one, through Redis: the sync task (`redis_sync.py`) with its
load and prefix-insert wire (`wire.py`), channels of shared verdicts (`shared_channel.py`,
`peer_wire.py`, and what every channel of verdicts does alike: `verdict_channel.py`), the
health channel (`health_events.py`, `health_share.py`), flow control's tenants' service
(`tenant_share.py`) and the probe lease (`probe_lease.py`).

May import `gateway.fleet`'s state and health, `gateway.prefix`, `gateway.config` and
`gateway.process.tasks`.
"""

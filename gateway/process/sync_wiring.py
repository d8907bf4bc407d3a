"""Replicas sharing state through Redis: the sync a generation runs when `state.backend`
is `redis`, with the channels its config turns on (health, quality, tenants' service)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.admission.controller import Admission
    from gateway.config.root import Config
    from gateway.fleet.state import FleetState
    from gateway.fleet.sync.redis_sync import RedisFleetSync
    from gateway.fleet.sync.shared_channel import SharedChannel
    from gateway.quality.book.quality_book import QualityBook
    from gateway.routing.router import Router


def fleet_sync(
    config: Config,
    state: FleetState,
    router: Router,
    book: QualityBook | None,
    admission: Admission,
) -> RedisFleetSync | None:
    """With `state.backend: redis`, share prefix inserts, load, health and quality verdicts
    and (with flow control on) tenants' service with other replicas. The sync is the
    generation's, as its flow control is: a reload's new `Admission` gets its own."""
    shared = config.state
    if shared.backend != "redis":
        return None
    # The sync and redis-py load only for a config that shares state through Redis.
    from gateway.fleet.sync.health_share import HealthShare, hold_caps
    from gateway.fleet.sync.redis_sync import RedisFleetSync
    from gateway.quality.shared import QualityShare

    channels: list[SharedChannel] = []
    max_age_s = shared.peer_event_max_age_s
    if shared.share_health:
        caps = hold_caps(config.backends, config.health)
        channels.append(HealthShare(state, caps, max_age_s))
    if shared.share_quality and book is not None:
        names = [b.name for b in config.backends]
        channels.append(QualityShare(book, names, max_age_s))
    if shared.share_tenants and config.flow_control.enabled:
        channels.append(_tenant_share(config, admission))
    sync = RedisFleetSync(shared, state, router.index, channels=channels)
    router.on_insert = sync.enqueue
    return sync


def _tenant_share(config: Config, admission: Admission) -> SharedChannel:
    """Flow control's charges published to the peers, theirs added to its ledger."""
    from gateway.fleet.sync.tenant_share import TenantShare

    tenants = config.flow_control.tenants
    return TenantShare(
        admission,
        half_life_s=tenants.half_life_s,
        max_pending=tenants.max_tenants,
        max_age_s=config.state.peer_event_max_age_s,
    )

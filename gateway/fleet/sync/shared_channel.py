"""What the fleet sync shares besides prefixes and load: a `SharedChannel` is state one
replica publishes on `{namespace}:{name}` and its peers apply (health verdicts in
`health_share`, quality verdicts in `gateway.quality.shared`, both a `VerdictChannel`;
tenants' service in `tenant_share`)."""

from __future__ import annotations

from typing import Protocol


class SharedChannel(Protocol):
    """State shared on `{namespace}:{name}`: what to publish each tick, what to do with a
    peer's message. Both run on the sync task; neither may wait."""

    name: str

    def attach(self) -> None: ...

    def detach(self) -> None: ...

    def take(self, replica: str) -> list[bytes]: ...

    def apply(self, data: bytes, replica: str) -> None: ...

    def reassert(self) -> None:
        """Queue again what still holds, for peers that may have missed it."""

    def status(self) -> dict[str, object]: ...


class ChannelCounts:
    """What every channel counts, and the status it reports in `/v1/switchyard/state`:
    items sent, peers' items applied here, ignored as `stale`, `rejected` as unreadable."""

    def __init__(self) -> None:
        self.published = 0
        self.applied = 0
        self.stale = 0
        self.rejected = 0

    def counts(self, queued: int) -> dict[str, object]:
        return {
            "queued": queued,
            "published": self.published,
            "applied": self.applied,
            "stale": self.stale,
            "rejected": self.rejected,
        }

"""What the tests of peer verdict channels share: a wall clock they move, and a replica's
messages handed to its peers as the fleet sync would."""

from __future__ import annotations

from typing import Protocol

from gateway.fleet.sync.shared_channel import SharedChannel

WALL = 1_764_800_000.0
"""The wall clock's start: a plausible Unix time."""
MAX_AGE_S = 10.0
"""`state.peer_event_max_age_s` in these tests."""


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Peer(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def share(self) -> SharedChannel: ...


def send(sender: Peer, *peers: Peer) -> list[bytes]:
    """What `sender` publishes now, applied by each of `peers`; the messages."""
    messages = sender.share.take(sender.id)
    for peer in peers:
        for message in messages:
            peer.share.apply(message, peer.id)
    return messages

"""A client's own API on its way through an adapter that speaks it: which adapters do,
and a native stream's own events, kept beside its OpenAI translation.

An adapter that sends a client's request in the client's own API (`NativeRequest`) still
hands the host OpenAI chunks: the relay, usage, quality signals and cascades read those.
The client, though, gets the backend's events as they came. The adapter adds each
complete event here as it translates it; the host takes them after each chunk it relays
(`take`), so the buffer holds at most the events of one upstream read. A backend's error
event is not kept: the host ends a failed stream with its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from providers.errors import NativeApiRequired

if TYPE_CHECKING:
    from providers.base import Provider, UpstreamRequest, UpstreamStream


def speaks(provider: Provider, api: str) -> bool:
    """Whether `provider` sends a `NativeRequest` in `api` as it came (its `native_apis`)."""
    return api in getattr(provider, "native_apis", ())


def refused_native(error: Exception) -> bool:
    """Whether `error` is `unspoken`'s: a candidate skipped, not a backend that failed."""
    return isinstance(error, NativeApiRequired)


def unspoken(
    provider: Provider, backend: str, request: UpstreamRequest
) -> NativeApiRequired | None:
    """The error for sending `request` to `provider` when only a backend speaking its
    client's API may serve it (`NativeRequest.required`) and `provider` does not."""
    native = request.native
    if native is None or native.required is None or speaks(provider, native.api):
        return None
    return NativeApiRequired(f"{native.required} (backend {backend} does not)")


class NativeEvents:
    """Complete server-sent events of the backend's own stream, in order, not yet taken."""

    __slots__ = ("_events",)

    def __init__(self) -> None:
        self._events: list[tuple[str, bytes]] = []

    def add(self, name: str, data: bytes) -> None:
        """One event: its name (Anthropic's `type`) and its data as the backend sent it."""
        self._events.append((name, data))

    def take(self) -> list[tuple[str, bytes]]:
        """The events added since the last call, oldest first."""
        events, self._events = self._events, []
        return events


def native_events(stream: UpstreamStream) -> NativeEvents | None:
    """The stream's own events when its adapter kept them (it sent a `NativeRequest`)."""
    events = getattr(stream, "native", None)
    return events if isinstance(events, NativeEvents) else None

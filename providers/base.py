"""The provider adapter contract: open, send, stream, health, close."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Protocol, cast

from providers.cache_breakpoints import CacheBreakpoints
from providers.rate_limits import RateLimitSignal
from providers.settings import ProviderSettings

DEFAULT_MAX_BODY_BYTES = 128 * 1024 * 1024
DEFAULT_MAX_STREAM_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Deadlines:
    """Per-attempt limits: times in seconds, already clipped to what is left of the
    request, and the most an answer may weigh, past which it fails with
    `UpstreamResponseTooLarge` (a stream with its error event, never cut silently)."""

    connect_s: float
    first_byte_s: float
    between_chunks_s: float
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """A whole answer."""
    max_stream_bytes: int = DEFAULT_MAX_STREAM_BYTES
    """All the bytes of a streamed answer."""


@dataclass(frozen=True, slots=True)
class NativeRequest:
    """The client's request in its own API, for an adapter that speaks that API: sent as it
    is instead of translating `UpstreamRequest.body` (Anthropic's Messages request to an
    Anthropic backend: thinking blocks, their signatures and beta fields all reach it)."""

    api: str
    """Which API `body` is in: `ANTHROPIC_MESSAGES`."""
    body: bytes
    """The client's body, already asking for the backend's model id."""
    headers: Mapping[str, str]
    """The client's headers of that API to pass on (`anthropic-version`, `anthropic-beta`)."""
    marked: bool
    """The client set prompt-cache breakpoints of its own (the host then adds none)."""
    required: str | None = None
    """Why only a backend speaking `api` may serve the request (the translation lacks a
    part of it: a document, a server tool); None when any backend may."""


ANTHROPIC_MESSAGES = "anthropic.messages"


@dataclass(frozen=True, slots=True)
class UpstreamRequest:
    """One OpenAI-style call, already addressed to a backend's model."""

    path: str
    """Relative to the backend's base URL, e.g. "/chat/completions"."""
    body: bytes
    stream: bool
    cache_breakpoints: CacheBreakpoints | None = None
    """Prompt-cache breakpoints the host adds (explicit-caching adapters only)."""
    marked_body: bytes | None = None
    """`body` with the client's own prompt-cache breakpoints (`cache_control`), when
    `body` is the request without them: an adapter whose API reads them (Anthropic's)
    sends this one; every other adapter sends `body`."""
    headers: Mapping[str, str] | None = None
    """Headers the host adds to this request only (W3C `traceparent` when it traces);
    the adapter's own headers win over them."""
    native: NativeRequest | None = None
    """The client's own request, for an adapter that speaks its API; the others (and an
    adapter that does not) send `body`."""


@dataclass(frozen=True, slots=True)
class UpstreamResponse:
    status: int
    content_type: str
    body: bytes
    rate_limit: RateLimitSignal | None = None
    """What the answer's headers said of the backend's limits; None when nothing."""
    document: object = None
    """`body` parsed as JSON by the adapter that checked it, for readers after it (usage,
    the quality tap) to use instead of parsing it again; None when nobody parsed it.
    Only a top-level field's value may differ from `body` (a renamed model)."""
    native_body: bytes | None = None
    """The answer in the API of `UpstreamRequest.native`, as the backend sent it, when the
    adapter sent that; `body` is still its OpenAI translation (usage, quality, cascades)."""


@dataclass(frozen=True, slots=True)
class HealthResult:
    healthy: bool
    reason: str


class UpstreamStream(Protocol):
    """A stream whose first chunk has arrived; after it, the backend is committed."""

    content_type: str
    first_chunk: bytes
    rate_limit: RateLimitSignal | None
    """What the stream's headers said of the backend's limits; None when nothing."""

    def rest(self) -> AsyncIterator[bytes]:
        """The remaining raw bytes; raises an UpstreamError on a stall or a broken stream."""
        ...

    async def aclose(self) -> None: ...


class StreamSink(Protocol):
    """Where a piped stream's remaining bytes go, straight from the upstream connection's
    callbacks (no task woken per chunk)."""

    def data(self, chunk: bytes) -> None:
        """The next raw bytes, as they arrived."""
        ...

    def end(self, error: Exception | None) -> None:
        """The stream ended (None) or broke: an UpstreamError (a stall, a broken stream, a
        bound passed), or the gateway's own error when it ends a stream. Called once;
        nothing comes after it."""
        ...


class StreamValve(Protocol):
    """Flow control of a piped stream: stop reading the backend while the reader cannot
    keep up (the stall watchdog does not count that time)."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...


class PipeableStream(UpstreamStream, Protocol):
    """A stream that can hand its bytes to a `StreamSink` as they arrive instead of being
    iterated with `rest()` (the plain-HTTP client's uncompressed streams)."""

    @property
    def can_pipe(self) -> bool: ...

    def pipe(self, sink: StreamSink) -> StreamValve:
        """From now on, the stream's bytes go to `sink`; only when `can_pipe`, and instead
        of `rest()`. `aclose()` still ends it."""
        ...


def pipeable(stream: UpstreamStream) -> PipeableStream | None:
    """`stream` when it can be piped now, else None (iterate `rest()`)."""
    if getattr(stream, "can_pipe", False):
        return cast(PipeableStream, stream)
    return None


class Provider(Protocol):
    """One backend's adapter, ready to send once opened by its `ProviderFactory`."""

    name: str

    @property
    def base_url(self) -> str:
        """The OpenAI base URL this adapter talks to (an emulated engine's once started)."""
        ...

    async def send(self, request: UpstreamRequest, deadlines: Deadlines) -> UpstreamResponse:
        """A complete non-streaming response, or an UpstreamError."""
        ...

    async def open_stream(self, request: UpstreamRequest, deadlines: Deadlines) -> UpstreamStream:
        """Connect and wait for the first chunk, or raise an UpstreamError."""
        ...

    async def health(self, timeout_s: float) -> HealthResult: ...

    async def close(self) -> None:
        """Release what opening took: connections, and an engine the adapter started."""
        ...


class ProviderFactory(Protocol):
    """Opens one kind's adapter; what it needs is started before it returns.

    Opening is async because an adapter may start something first (the `emulated` kind
    starts an engine on loopback). A factory that fails leaves nothing running; the
    caller closes a provider it was given with `close()`.
    """

    async def __call__(self, settings: ProviderSettings) -> Provider: ...


def upstream_headers(api_key: str | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept-encoding": "identity"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    if extra:
        headers.update(extra)
    return headers

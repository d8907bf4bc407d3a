"""Client API formats on the proxy path: the contract, OpenAI's, which changes nothing, and
the translated request the other formats share.

The gateway routes, dispatches and accounts for OpenAI requests only. A `Dialect` is the
edge of one client format: how a caller's key is found, how its body becomes the OpenAI
request the proxy routes (a `Translation`), and how answers and errors go back in its
shape. Everything between (decision, dispatch, leases, telemetry, quality) is shared, and
the quality and usage taps keep reading the backend's OpenAI bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from starlette.responses import Response

from gateway.http.relay.translated import (
    ClientEvents,
    Translated,
    TranslatedStream,
    relay_translated,
)
from gateway.http.responses import error_response, json_response
from gateway.tenancy.caller import Caller

if TYPE_CHECKING:
    from gateway.config.bounds import BoundsConfig
    from gateway.http.relay.splice import Shape
    from gateway.http.relay.streaming import StreamOutcome
    from providers.base import NativeRequest, UpstreamResponse
    from providers.errors import ApiError
    from providers.native import NativeEvents

ContextT = TypeVar("ContextT")

SSE_MEDIA_TYPE = "text/event-stream"

Authorize = Callable[[str | None], Caller | None]
"""`Gateway.authorize`: an Authorization header's value to the caller (None: auth off)."""


class Translation(Protocol):
    """One request read into the gateway's OpenAI request, and the way its answer goes back."""

    body: bytes
    """The OpenAI request body to parse, route and forward."""
    translated: bool
    """Whether the gateway made `body` from another format, whose reading checked the
    request's bounds in that format's field names."""
    plain_body: bytes | None
    """`body` without the client's prompt-cache breakpoints, for the backends whose API
    has none (`UpstreamRequest.marked_body`); None when `body` carries none."""
    native: NativeRequest | None
    """The client's request as it came, for a backend that speaks its API (which then
    answers in it: `UpstreamResponse.native_body`, `NativeEvents`); None for OpenAI's."""

    def respond(
        self, response: UpstreamResponse, headers: dict[str, str], prompt_tokens: int
    ) -> Response:
        """The client's response for a whole upstream answer; raises an ApiError when the
        answer cannot be read. `prompt_tokens` is the gateway's own estimate."""
        ...

    def relay(
        self,
        chunks: AsyncIterator[bytes],
        outcome: StreamOutcome,
        prompt_tokens: int,
        native: NativeRelay | None = None,
    ) -> AsyncIterator[bytes]:
        """The client's stream for the relayed OpenAI SSE bytes (which end with `[DONE]` or
        the gateway's error event, `outcome.error` set); with `native`, the backend's own
        events, which the client's format writes instead of translating the chunks."""
        ...

    def shape(self, outcome: StreamOutcome, prompt_tokens: int) -> Shape | None:
        """The client's format for a spliced stream's OpenAI bytes; None: as they came."""
        ...

    def stream_media_type(self, upstream: str) -> str: ...


class Dialect(Protocol):
    """One client API format; stateless, one per proxied path."""

    def authorize(self, headers: Mapping[str, str], check: Authorize) -> Caller | None:
        """The caller (None when auth is off); raises Unauthorized."""
        ...

    def read(
        self, raw: bytes, bounds: BoundsConfig, headers: Mapping[str, str] | None = None
    ) -> Translation:
        """The request as the gateway's OpenAI request; raises an ApiError (400) if it is
        malformed, over one of `bounds`, or cannot be expressed. `headers`: the request's,
        of which a format passes its own on to a backend speaking it."""
        ...

    def error_response(self, exc: ApiError, headers: dict[str, str] | None = None) -> Response:
        """Any error of the gateway's tree, in this format."""
        ...


@dataclass(frozen=True, slots=True)
class NativeRelay:
    """A stream whose backend answered in the client's own API: its events, and the model
    name the client is to see in them (None: the backend's, as it came)."""

    events: NativeEvents
    model: str | None


class _Verbatim:
    """An OpenAI request: forwarded as it came, its answer relayed byte for byte."""

    __slots__ = ("body",)
    translated = False
    plain_body: bytes | None = None
    native: NativeRequest | None = None

    def __init__(self, body: bytes) -> None:
        self.body = body

    def respond(
        self, response: UpstreamResponse, headers: dict[str, str], prompt_tokens: int
    ) -> Response:
        return Response(response.body, response.status, headers, response.content_type)

    def relay(
        self,
        chunks: AsyncIterator[bytes],
        outcome: StreamOutcome,
        prompt_tokens: int,
        native: NativeRelay | None = None,
    ) -> AsyncIterator[bytes]:
        return chunks

    def shape(self, outcome: StreamOutcome, prompt_tokens: int) -> Shape | None:
        return None

    def stream_media_type(self, upstream: str) -> str:
        return upstream


class TranslatedRequest(Generic[ContextT]):
    """A request of another client format: the OpenAI body it became, and its answer
    translated back, whole (`answer`) or as the format's stream events (`events`). Both
    read the request through its `context`, made with the gateway's prompt estimate (for a
    backend that reports no usage)."""

    __slots__ = ("_answer", "_context", "_events", "body", "plain_body")
    translated = True
    native: NativeRequest | None = None

    def __init__(
        self,
        body: bytes,
        *,
        context: Callable[[int], ContextT],
        answer: Callable[[bytes, ContextT], Mapping[str, object]],
        events: Callable[[ContextT], ClientEvents],
        plain_body: bytes | None = None,
    ) -> None:
        self.body = body
        self.plain_body = plain_body
        self._context = context
        self._answer = answer
        self._events = events

    def respond(
        self, response: UpstreamResponse, headers: dict[str, str], prompt_tokens: int
    ) -> Response:
        answer = self._answer(response.body, self._context(prompt_tokens))
        return json_response(answer, 200, headers)

    def relay(
        self,
        chunks: AsyncIterator[bytes],
        outcome: StreamOutcome,
        prompt_tokens: int,
        native: NativeRelay | None = None,
    ) -> AsyncIterator[bytes]:
        stream = TranslatedStream(self._events(self._context(prompt_tokens)))
        return relay_translated(chunks, outcome, stream)

    def shape(self, outcome: StreamOutcome, prompt_tokens: int) -> Shape | None:
        return Translated(outcome, TranslatedStream(self._events(self._context(prompt_tokens))))

    def stream_media_type(self, upstream: str) -> str:
        return SSE_MEDIA_TYPE


class OpenAIDialect:
    """OpenAI's own API: the identity."""

    def authorize(self, headers: Mapping[str, str], check: Authorize) -> Caller | None:
        return check(headers.get("authorization"))

    def read(
        self, raw: bytes, bounds: BoundsConfig, headers: Mapping[str, str] | None = None
    ) -> Translation:
        """Verbatim: its bounds are checked when the body is parsed (`wire.parse_body`)."""
        return _Verbatim(raw)

    def error_response(self, exc: ApiError, headers: dict[str, str] | None = None) -> Response:
        return error_response(exc, headers)


OPENAI = OpenAIDialect()

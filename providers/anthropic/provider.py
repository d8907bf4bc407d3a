"""The `anthropic` adapter: OpenAI chat-completions traffic served by the Messages API.

The host speaks OpenAI's wire format both ways; this adapter translates the request,
POSTs it to `{base_url}/messages` and translates the answer back, whole or as a stream
of OpenAI chunks ending in `data: [DONE]`. The HTTP side is `providers/transport/`'s
(pooled session, deadlines, stall watchdog, transport errors, Retry-After); the headers,
bodies, error statuses and what a health probe's status means are Anthropic's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import NamedTuple

import orjson
from pydantic import ValidationError

from providers.anthropic.chat_request import UntranslatableRequest
from providers.anthropic.error_mapping import ErrorMapper
from providers.anthropic.messages_wire import MessageOut
from providers.anthropic.native import native_body, native_headers
from providers.anthropic.request_translation import to_messages_request
from providers.anthropic.response_translation import chat_completion_bytes
from providers.anthropic.stream_translation import StreamTranslator
from providers.base import (
    ANTHROPIC_MESSAGES,
    Deadlines,
    HealthResult,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamStream,
    upstream_headers,
)
from providers.native import NativeEvents
from providers.openai_chat_request import CHAT_PATH as CHAT_PATH  # re-exported
from providers.settings import (
    DEFAULT_IDLE_KEEPALIVE_S,
    NATIVE_BASE_URLS,
    HttpClient,
    ProviderSettings,
)
from providers.translated_stream import TranslatedStream
from providers.transport.http_transport import (
    CREDENTIAL_STATUSES,
    HttpTransport,
    credentials_refused,
)

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_BASE_URL = NATIVE_BASE_URLS["anthropic"]


async def open_anthropic(settings: ProviderSettings) -> AnthropicProvider:
    """The adapter for `settings.base_url`, by default Anthropic's API (DEFAULT_BASE_URL)."""
    return AnthropicProvider(
        settings.name,
        settings.base_url or DEFAULT_BASE_URL,
        settings.api_key,
        max_connections=settings.max_connections,
        idle_keepalive_s=settings.idle_keepalive_s,
        http_client=settings.http_client,
        api_key_env=settings.api_key_env,
    )


def anthropic_headers(api_key: str | None) -> dict[str, str]:
    extra = {"anthropic-version": ANTHROPIC_VERSION}
    if api_key:
        extra["x-api-key"] = api_key
    return upstream_headers(None, extra)


class AnthropicProvider:
    native_apis = frozenset({ANTHROPIC_MESSAGES})
    """A client's own Messages request is sent as it came (`UpstreamRequest.native`)."""

    def __init__(
        self,
        name: str,
        base_url: str,
        api_key: str | None,
        *,
        max_connections: int = 256,
        idle_keepalive_s: float = DEFAULT_IDLE_KEEPALIVE_S,
        http_client: HttpClient = "lean",
        clock: Callable[[], float] = time.time,
        api_key_env: str | None = None,
    ) -> None:
        """`clock` gives the `created` timestamp of the responses it translates;
        `api_key_env` is the variable the key came from, which a refusal of it names."""
        self.name = name
        self.base_url = base_url.rstrip("/")
        self._errors = ErrorMapper(name, api_key, api_key_env)
        self._clock = clock
        # A redirect is an error too: the adapter must read the answer, and cannot read one.
        self._http = HttpTransport(
            name,
            anthropic_headers(api_key),
            self._errors.status_error,
            secret=api_key,
            max_connections=max_connections,
            idle_keepalive_s=idle_keepalive_s,
            http_client=http_client,
            error_from_status=300,
            provider_url=DEFAULT_BASE_URL,
            # A client of Anthropic's own API may ask for its version (`NativeRequest`).
            overridable=frozenset({"anthropic-version"}),
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider(name={self.name!r}, base_url={self.base_url!r})"

    async def send(self, request: UpstreamRequest, deadlines: Deadlines) -> UpstreamResponse:
        out = self._outgoing(request, stream=False)
        response = await self._http.send(self._messages_url, out.body, deadlines, out.headers)
        try:
            message = MessageOut.model_validate_json(response.body)
        except ValidationError:
            raise self._errors.protocol_error("answered with an unreadable message") from None
        completion = chat_completion_bytes(message, created=int(self._clock()))
        return UpstreamResponse(
            200,
            "application/json",
            completion,
            response.rate_limit,
            native_body=response.body if out.native else None,
        )

    async def open_stream(self, request: UpstreamRequest, deadlines: Deadlines) -> AnthropicStream:
        out = self._outgoing(request, stream=True)
        events = NativeEvents() if out.native else None
        translator = StreamTranslator(
            self._errors,
            include_usage=out.include_usage,
            created=int(self._clock()),
            native=events,
        )
        # The first-byte deadline runs until the first translated chunk, which is when the
        # stream commits the backend.
        with self._http.map_upstream_errors():
            async with asyncio.timeout(deadlines.first_byte_s):
                raw = await self._http.open_stream(
                    self._messages_url, out.body, deadlines, out.headers
                )
                return await AnthropicStream(self._errors, raw, translator, events).opened()

    async def health(self, timeout_s: float) -> HealthResult:
        """Listing one model: cheap, and it checks the key as well as the address."""
        return await self._http.probe(self.base_url + "/models?limit=1", timeout_s, _health_of)

    async def close(self) -> None:
        await self._http.close()

    @property
    def _messages_url(self) -> str:
        return self.base_url + "/messages"

    def _outgoing(self, request: UpstreamRequest, *, stream: bool) -> _Outgoing:
        """The body and per-request headers to send, and whether they are the client's own
        Messages request (then its answer goes back as it came, beside the translation)."""
        if request.path != CHAT_PATH:
            raise self._errors.invalid_request(
                f"only {CHAT_PATH} is served, not {request.path}", param=None
            )
        native = request.native
        if native is not None and native.api == ANTHROPIC_MESSAGES:
            body = native_body(native, request.cache_breakpoints)
            # The host reads usage from the translated chunks: always asked for.
            return _Outgoing(body, native_headers(native, request.headers), True, True)
        try:
            marked = request.marked_body or request.body  # the client's breakpoints
            translated = to_messages_request(
                marked, stream=stream, breakpoints=request.cache_breakpoints
            )
        except UntranslatableRequest as exc:
            raise self._errors.invalid_request(exc.message, param=exc.param) from None
        body = orjson.dumps(translated.body)
        return _Outgoing(body, request.headers, False, translated.include_usage)


class _Outgoing(NamedTuple):
    body: bytes
    headers: Mapping[str, str] | None
    native: bool
    """`body` is the client's own Messages request."""
    include_usage: bool
    """The translated stream ends with a usage chunk."""


def _health_of(status: int) -> HealthResult:
    if status in CREDENTIAL_STATUSES:
        return credentials_refused(status)
    if status != 200:
        return HealthResult(False, f"probe got HTTP {status}")
    return HealthResult(True, "probe ok (HTTP 200)")


class AnthropicStream(TranslatedStream):
    """An Anthropic stream read as OpenAI chunk bytes, over the raw stream under it; with
    `native`, the stream's own events are kept there too, for a client of Anthropic's API."""

    def __init__(
        self,
        errors: ErrorMapper,
        raw: UpstreamStream,
        translator: StreamTranslator,
        native: NativeEvents | None = None,
    ) -> None:
        super().__init__(raw)
        self._errors = errors
        self._translator = translator
        self.native = native

    async def start(self) -> None:
        # An `error` event before the first chunk (an overload, say) fails the attempt and
        # lets the next candidate answer, even one right behind the first events.
        translated = self._translator.feed(self._raw.first_chunk)
        while not translated:
            data = await anext(self._raw_rest, None)
            if data is None:
                raise self._errors.protocol_error("closed the stream before sending data")
            translated = self._translator.feed(data)
        self._translator.raise_failure()
        self.first_chunk = translated

    async def rest(self) -> AsyncIterator[bytes]:
        translator = self._translator
        if translator.finished:
            return
        async for data in self._raw_rest:
            translated = translator.feed(data)
            if translated:
                yield translated
            translator.raise_failure()
            if translator.finished:
                return
        raise self._errors.protocol_error("ended the stream before message_stop")

"""The `anthropic` adapter: OpenAI chat-completions traffic served by the Messages API.

The host speaks OpenAI's wire format both ways; this adapter translates the request,
POSTs it to `{base_url}/messages` and translates the answer back, whole or as a stream
of OpenAI chunks ending in `data: [DONE]`. One pooled keep-alive aiohttp session per
backend, as the OpenAI-compatible adapter keeps.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import aiohttp
import orjson
from pydantic import ValidationError

from providers.anthropic.chat_request import UntranslatableRequest
from providers.anthropic.error_mapping import ErrorMapper
from providers.anthropic.messages_wire import MessageOut
from providers.anthropic.request_translation import TranslatedRequest, to_messages_request
from providers.anthropic.response_translation import chat_completion_bytes
from providers.anthropic.stream_translation import StreamTranslator
from providers.base import Deadlines, HealthResult, UpstreamRequest, UpstreamResponse
from providers.errors import UpstreamError, UpstreamTimeout
from providers.settings import DEFAULT_IDLE_KEEPALIVE_S, ProviderSettings

ANTHROPIC_VERSION = "2023-06-01"
CHAT_PATH = "/chat/completions"
_MAX_ERROR_BODY_BYTES = 64 * 1024


async def open_anthropic(settings: ProviderSettings) -> AnthropicProvider:
    """The adapter for `settings.base_url` (e.g. https://api.anthropic.com/v1)."""
    if settings.base_url is None:
        raise ValueError(f"backend {settings.name}: an Anthropic adapter needs base_url")
    return AnthropicProvider(
        settings.name,
        settings.base_url,
        settings.api_key,
        max_connections=settings.max_connections,
        idle_keepalive_s=settings.idle_keepalive_s,
    )


def anthropic_headers(api_key: str | None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept-encoding": "identity",
        "anthropic-version": ANTHROPIC_VERSION,
    }
    if api_key:
        headers["x-api-key"] = api_key
    return headers


class AnthropicProvider:
    def __init__(
        self,
        name: str,
        base_url: str,
        api_key: str | None,
        *,
        max_connections: int = 256,
        idle_keepalive_s: float = DEFAULT_IDLE_KEEPALIVE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`clock` gives the `created` timestamp of the responses it translates."""
        self.name = name
        self.base_url = base_url.rstrip("/")
        self._headers = anthropic_headers(api_key)
        self._errors = ErrorMapper(name, api_key)
        self._max_connections = max_connections
        self._idle_keepalive_s = idle_keepalive_s
        self._clock = clock
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"AnthropicProvider(name={self.name!r}, base_url={self.base_url!r})"

    @property
    def session(self) -> aiohttp.ClientSession:
        # Created lazily: a session binds to the running loop.
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self._max_connections,
                limit_per_host=0,
                keepalive_timeout=self._idle_keepalive_s,
            )
            self._session = aiohttp.ClientSession(
                connector=connector, trust_env=False, raise_for_status=False
            )
        return self._session

    async def send(self, request: UpstreamRequest, deadlines: Deadlines) -> UpstreamResponse:
        translated = self._translate(request, stream=False)
        with self._errors.map_upstream_errors():
            async with asyncio.timeout(deadlines.first_byte_s):
                response = await self._post(translated, deadlines)
                try:
                    await self._raise_for_status(response)
                    body = await response.read()
                except BaseException:
                    response.close()
                    raise
        response.release()
        try:
            message = MessageOut.model_validate_json(body)
        except ValidationError:
            raise self._errors.protocol_error("answered with an unreadable message") from None
        completion = chat_completion_bytes(message, created=int(self._clock()))
        return UpstreamResponse(200, "application/json", completion)

    async def open_stream(self, request: UpstreamRequest, deadlines: Deadlines) -> AnthropicStream:
        translated = self._translate(request, stream=True)
        translator = StreamTranslator(
            self._errors, include_usage=translated.include_usage, created=int(self._clock())
        )
        with self._errors.map_upstream_errors():
            async with asyncio.timeout(deadlines.first_byte_s):
                response = await self._post(translated, deadlines)
                try:
                    await self._raise_for_status(response)
                    first = await self._first_chunk(response, translator)
                except BaseException:
                    response.close()
                    raise
        return AnthropicStream(
            self._errors, response, translator, first, deadlines.between_chunks_s
        )

    async def health(self, timeout_s: float) -> HealthResult:
        """Listing one model: cheap, and it checks the key as well as the address."""
        try:
            with self._errors.map_upstream_errors():
                async with (
                    asyncio.timeout(timeout_s),
                    self.session.get(
                        self.base_url + "/models",
                        params={"limit": "1"},
                        headers=self._headers,
                        timeout=aiohttp.ClientTimeout(total=timeout_s),
                        allow_redirects=False,
                    ) as response,
                ):
                    status = response.status
        except UpstreamError as exc:
            return HealthResult(False, f"probe failed: {exc.message}")
        if status != 200:
            return HealthResult(False, f"probe got HTTP {status}")
        return HealthResult(True, "probe ok (HTTP 200)")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _translate(self, request: UpstreamRequest, *, stream: bool) -> TranslatedRequest:
        if request.path != CHAT_PATH:
            raise self._errors.invalid_request(
                f"only {CHAT_PATH} is served, not {request.path}", param=None
            )
        try:
            return to_messages_request(request.body, stream=stream)
        except UntranslatableRequest as exc:
            raise self._errors.invalid_request(exc.message, param=exc.param) from None

    async def _post(
        self, translated: TranslatedRequest, deadlines: Deadlines
    ) -> aiohttp.ClientResponse:
        # No socket read timeout: the first byte is bounded by the caller, the gaps in a
        # stream by AnthropicStream.
        return await self.session.post(
            self.base_url + "/messages",
            data=orjson.dumps(translated.body),
            headers=self._headers,
            timeout=aiohttp.ClientTimeout(sock_connect=deadlines.connect_s),
            allow_redirects=False,
        )

    async def _raise_for_status(self, response: aiohttp.ClientResponse) -> None:
        if response.status < 300:
            return
        body = await response.content.read(_MAX_ERROR_BODY_BYTES)
        raise self._errors.status_error(response.status, body, response.headers.get("retry-after"))

    async def _first_chunk(
        self, response: aiohttp.ClientResponse, translator: StreamTranslator
    ) -> bytes:
        # The stream commits the backend only once there is something to relay: an
        # `error` event before that (an overload, say) lets the next candidate answer.
        while True:
            data = await response.content.readany()
            if not data:
                raise self._errors.protocol_error("closed the stream before sending data")
            translated = translator.feed(data)
            if translated:
                # Nothing is relayed yet: an error right behind the first events still
                # fails the attempt.
                translator.raise_failure()
                return translated


class AnthropicStream:
    """An Anthropic stream past its first event, read as OpenAI chunk bytes."""

    content_type = "text/event-stream"

    def __init__(
        self,
        errors: ErrorMapper,
        response: aiohttp.ClientResponse,
        translator: StreamTranslator,
        first_chunk: bytes,
        gap_s: float,
    ) -> None:
        self._errors = errors
        self._response = response
        self._translator = translator
        self._gap_s = gap_s
        self.first_chunk = first_chunk

    async def rest(self) -> AsyncIterator[bytes]:
        errors = self._errors
        content = self._response.content
        with errors.map_upstream_errors():
            while not self._translator.finished:
                try:
                    async with asyncio.timeout(self._gap_s):
                        data = await content.readany()
                except TimeoutError:
                    raise UpstreamTimeout(
                        f"backend {errors.backend} stalled for {self._gap_s:g}s mid-stream",
                        backend=errors.backend,
                    ) from None
                if not data:
                    raise errors.protocol_error("ended the stream before message_stop")
                translated = self._translator.feed(data)
                if translated:
                    yield translated
                self._translator.raise_failure()

    async def aclose(self) -> None:
        # Closing (not releasing) drops the connection, which is what stops an
        # unfinished generation upstream.
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()

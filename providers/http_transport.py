"""The HTTP layer under every networked adapter: one pooled session per backend, the
deadlines, the stall watchdog, Retry-After and rate-limit headers, and the one mapping of
transport failures.

Plain-HTTP requests (local engines, GPU replicas) go through `providers.h1_client`, a lean
keep-alive client that costs about 60 % of aiohttp's CPU per exchange; `https://` URLs and
health probes go through aiohttp (not httpx: a tenth of its CPU per request on this path).
Adapters differ only above it: where a request goes, which headers carry the key, how an
error status reads (`StatusErrorMapper`) and what a health probe's status means
(`HealthJudge`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Protocol

import aiohttp
import orjson

from providers.base import Deadlines, HealthResult, UpstreamResponse
from providers.errors import (
    UpstreamError,
    UpstreamProtocolError,
    UpstreamResponseTooLarge,
    UpstreamStatusError,
    UpstreamTimeout,
)
from providers.h1_client import H1Pool
from providers.rate_limits import rate_limit_signal
from providers.rate_limits import retry_after_s as retry_after_s  # re-exported
from providers.settings import DEFAULT_IDLE_KEEPALIVE_S, HttpClient
from providers.upstream_errors import UpstreamErrors

_MAX_ERROR_BODY_BYTES = 64 * 1024

StatusErrorMapper = Callable[[int, bytes, float | None], UpstreamError]
"""Turns an error status, its body (the key scrubbed out) and its Retry-After (seconds)
into the error to raise: each adapter reads its API's error bodies its own way."""

HealthJudge = Callable[[int], HealthResult]
"""What a health probe's HTTP status says about the backend."""

CREDENTIAL_STATUSES = frozenset({401, 403})
"""The statuses with which a backend refuses the gateway's own key."""


class _Body(Protocol):
    async def readany(self) -> bytes: ...
    async def read(self, n: int = -1) -> bytes: ...
    def iter_any(self) -> AsyncIterator[bytes]: ...
    def at_eof(self) -> bool: ...


class _Response(Protocol):
    """What this module reads of an answer: aiohttp's `ClientResponse` or an `H1Response`."""

    @property
    def status(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def content(self) -> _Body: ...
    @property
    def content_length(self) -> int | None: ...
    async def read(self) -> bytes: ...
    def release(self) -> None: ...
    def close(self) -> None: ...


_Reader = Callable[[_Response], Awaitable[bytes]]


def backend_session(connector: aiohttp.BaseConnector) -> aiohttp.ClientSession:
    """An aiohttp session for talking to backends: no proxy settings from the environment,
    statuses left to the caller, and no cookie jar (a backend's Set-Cookie must not ride
    along on every later client's request; filtering a jar per request costs CPU too)."""
    return aiohttp.ClientSession(
        connector=connector,
        trust_env=False,
        raise_for_status=False,
        cookie_jar=aiohttp.DummyCookieJar(),
    )


class HttpTransport:
    """One backend's connection pool and the exchanges over it; fails only with UpstreamErrors.

    `secret` (the API key) is scrubbed from error bodies before `status_error` sees them.
    Statuses from `error_from_status` on are errors: 400, or 300 for an adapter that must
    read the answer and cannot read a redirect it does not follow.
    """

    def __init__(
        self,
        name: str,
        headers: Mapping[str, str],
        status_error: StatusErrorMapper,
        *,
        secret: str | None,
        max_connections: int = 256,
        idle_keepalive_s: float = DEFAULT_IDLE_KEEPALIVE_S,
        error_from_status: int = 400,
        http_client: HttpClient = "lean",
    ) -> None:
        self.name = name
        self._errors = UpstreamErrors(name)
        self._headers = dict(headers)
        self._status_error = status_error
        self._secret = secret
        self._max_connections = max_connections
        self._idle_keepalive_s = idle_keepalive_s
        self._error_from_status = error_from_status
        self._session: aiohttp.ClientSession | None = None
        self._h1 = (
            H1Pool(
                self._headers, max_connections=max_connections, idle_keepalive_s=idle_keepalive_s
            )
            if http_client == "lean"
            else None
        )

    @property
    def session(self) -> aiohttp.ClientSession:
        # Created lazily: a session binds to the running loop.
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self._max_connections,
                limit_per_host=0,
                keepalive_timeout=self._idle_keepalive_s,
            )
            self._session = backend_session(connector)
        return self._session

    async def send(self, url: str, body: bytes, deadlines: Deadlines) -> UpstreamResponse:
        """POST `body` and read the whole answer, all within the first-byte deadline and
        `deadlines.max_body_bytes`."""
        read = partial(_whole, name=self.name, max_bytes=deadlines.max_body_bytes)
        response, answer = await self._exchange(url, body, deadlines, read)
        response.release()
        signal = rate_limit_signal(response.headers)
        return UpstreamResponse(response.status, _content_type(response), answer, signal)

    async def open_stream(self, url: str, body: bytes, deadlines: Deadlines) -> HttpStream:
        """POST `body` and wait, within the first-byte deadline, for the first bytes."""
        response, first = await self._exchange(url, body, deadlines, _first_bytes)
        if not first:
            response.close()
            raise UpstreamProtocolError(
                f"backend {self.name} closed the stream before sending data", backend=self.name
            )
        return HttpStream(
            self, response, first, deadlines.between_chunks_s, deadlines.max_stream_bytes
        )

    async def probe(
        self, url: str, timeout_s: float, judge: HealthJudge, *, allow_redirects: bool = False
    ) -> HealthResult:
        """GET `url`: `judge` reads the status; getting none at all is unhealthy."""
        try:
            with self.map_upstream_errors():
                async with self.session.get(
                    url,
                    headers=self._headers,
                    timeout=aiohttp.ClientTimeout(total=timeout_s),
                    allow_redirects=allow_redirects,
                ) as response:
                    status = response.status
        except UpstreamError as exc:
            return HealthResult(False, f"probe failed: {exc.message}")
        return judge(status)

    async def close(self) -> None:
        if self._h1 is not None:
            await self._h1.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    def map_upstream_errors(self) -> UpstreamErrors:
        """Turn transport exceptions into the UpstreamError tree (providers/errors.py)."""
        return self._errors

    async def _exchange(
        self, url: str, body: bytes, deadlines: Deadlines, read: _Reader
    ) -> tuple[_Response, bytes]:
        """POST, check the status and `read`, all within the first-byte deadline; the
        response is closed when any of it fails."""
        with self.map_upstream_errors():
            async with asyncio.timeout(deadlines.first_byte_s):
                response = await self._post(url, body, deadlines)
                try:
                    await self._raise_for_status(response)
                    return response, await read(response)
                except BaseException:
                    response.close()
                    raise

    async def _post(self, url: str, body: bytes, deadlines: Deadlines) -> _Response:
        # No socket read timeout: aiohttp would re-arm a timer on every read. The first
        # byte is bounded by the caller, the gaps after it by the stream's watchdog.
        if self._h1 is not None and url.startswith("http://"):
            return await self._h1.post(url, body, deadlines.connect_s)
        return await self.session.post(
            url,
            data=body,
            headers=self._headers,
            timeout=aiohttp.ClientTimeout(sock_connect=deadlines.connect_s),
            allow_redirects=False,
        )

    async def _raise_for_status(self, response: _Response) -> None:
        status = response.status
        if status < self._error_from_status:
            return
        body = await response.content.read(_MAX_ERROR_BODY_BYTES)
        signal = rate_limit_signal(response.headers)
        retry_after = signal.retry_after_s if signal is not None else None
        error = self._status_error(status, self._scrub(body), retry_after)
        if isinstance(error, UpstreamStatusError) and error.rate_limit is None:
            error.rate_limit = signal
        raise error

    def _scrub(self, data: bytes) -> bytes:
        if self._secret and self._secret.encode() in data:
            return data.replace(self._secret.encode(), b"[redacted]")
        return data


class HttpStream:
    """An upstream stream past its first bytes: the rest as they come, watched for stalls."""

    def __init__(
        self,
        transport: HttpTransport,
        response: _Response,
        first_chunk: bytes,
        gap_s: float,
        max_bytes: int,
    ) -> None:
        self._transport = transport
        self._response = response
        self._gap_s = gap_s
        self._max_bytes = max_bytes
        self.first_chunk = first_chunk
        self.content_type = _content_type(response)
        self.rate_limit = rate_limit_signal(response.headers)

    async def rest(self) -> AsyncIterator[bytes]:
        content = self._response.content
        watchdog = _StallWatchdog(self._gap_s, self._response.close)
        size = len(self.first_chunk)
        try:
            with self._transport.map_upstream_errors():
                while True:
                    watchdog.waiting()
                    chunk = await content.readany()
                    watchdog.idle()
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > self._max_bytes:
                        self._response.close()
                        raise _too_large(self._transport.name, "stream", self._max_bytes)
                    yield chunk
        except UpstreamError:
            if not watchdog.fired:
                raise
        finally:
            watchdog.cancel()
        if watchdog.fired:
            name = self._transport.name
            raise UpstreamTimeout(
                f"backend {name} stalled for {self._gap_s:g}s mid-stream", backend=name
            )

    async def aclose(self) -> None:
        # Closing (not releasing) drops the connection, which is what stops an
        # unfinished generation upstream.
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()


class _StallWatchdog:
    """Closes the response if one read waits longer than `gap_s`.

    One timer per stream that re-arms itself only when it fires, instead of a timeout
    armed and cancelled around every read; time spent waiting for a slow client does not
    count, only time spent waiting for the backend.
    """

    def __init__(self, gap_s: float, on_stall: Callable[[], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._gap_s = gap_s
        self._on_stall = on_stall
        self._since: float | None = None
        self.fired = False
        self._handle = self._loop.call_later(gap_s, self._check)

    def waiting(self) -> None:
        self._since = self._loop.time()

    def idle(self) -> None:
        self._since = None

    def cancel(self) -> None:
        self._handle.cancel()

    def _check(self) -> None:
        waited = 0.0 if self._since is None else self._loop.time() - self._since
        if waited >= self._gap_s:
            self.fired = True
            self._on_stall()
            return
        self._handle = self._loop.call_later(self._gap_s - waited, self._check)


async def _whole(response: _Response, *, name: str, max_bytes: int) -> bytes:
    """The whole body, failing as soon as it is known to pass `max_bytes`."""
    length = response.content_length
    if length is not None and length <= max_bytes:
        return await response.read()
    if length is not None:
        raise _too_large(name, "answer", max_bytes)
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > max_bytes:
            raise _too_large(name, "answer", max_bytes)
        parts.append(chunk)
    return b"".join(parts)


def _too_large(name: str, what: str, max_bytes: int) -> UpstreamResponseTooLarge:
    return UpstreamResponseTooLarge(
        f"backend {name}'s {what} passed the limit of {max_bytes} bytes", backend=name
    )


async def _first_bytes(response: _Response) -> bytes:
    return await response.content.readany()


def _content_type(response: _Response) -> str:
    return response.headers.get("content-type", "application/json")


def check_json_answer(response: UpstreamResponse, name: str) -> UpstreamResponse:
    """`response` with its parsed body kept (`document`); UpstreamProtocolError (retryable)
    for a successful answer that is not JSON, whatever its content type says: a backend or
    proxy that cut or garbled it, or a proxy's HTML page. Relaying it would be a 200 the
    client cannot read."""
    if response.status >= 300:
        return response
    try:
        return replace(response, document=orjson.loads(response.body))
    except orjson.JSONDecodeError:
        raise UpstreamProtocolError(
            f"backend {name} answered {response.status} with a body that is not JSON",
            backend=name,
        ) from None


def credentials_refused(status: int) -> HealthResult:
    """The probe's verdict on a backend that refused the gateway's key: down until fixed."""
    return HealthResult(False, f"probe: credentials refused (HTTP {status})")

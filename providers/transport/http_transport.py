"""The HTTP layer under every networked adapter: one pooled session per backend, the
deadlines, the stall watchdog, Retry-After and rate-limit headers, and the one mapping of
transport failures.

Plain-HTTP requests and health probes (local engines, GPU replicas) go through
`providers.transport.h1_client`, a lean keep-alive client that costs about 60 % of
aiohttp's CPU per exchange; `https://` URLs and probes that follow redirects go through
aiohttp (not httpx: a tenth of its CPU per request on this path), which is imported when
first needed: a gateway in front of plain-HTTP engines never loads it.
Adapters differ only above it: where a request goes, which headers carry the key, how an
error status reads (`StatusErrorMapper`) and what a health probe's status means
(`HealthJudge`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import orjson

from providers.base import Deadlines, HealthResult, UpstreamResponse
from providers.errors import (
    UpstreamError,
    UpstreamNotFound,
    UpstreamProtocolError,
    UpstreamStatusError,
)
from providers.rate_limits import rate_limit_signal
from providers.rate_limits import retry_after_s as retry_after_s  # re-exported
from providers.settings import DEFAULT_IDLE_KEEPALIVE_S, HttpClient
from providers.transport.h1_client import H1Pool
from providers.transport.http_stream import HttpStream, RawResponse, content_type, too_large
from providers.transport.upstream_errors import UpstreamErrors

if TYPE_CHECKING:
    import aiohttp

_MAX_ERROR_BODY_BYTES = 64 * 1024
_MAX_REDIRECTS = 10
"""As aiohttp's default, for probes that follow redirects."""
_REDIRECTS = frozenset({301, 302, 303, 307, 308})

StatusErrorMapper = Callable[[int, bytes, float | None], UpstreamError]
"""Turns an error status, its body (the key scrubbed out) and its Retry-After (seconds)
into the error to raise: each adapter reads its API's error bodies its own way."""

HealthJudge = Callable[[int], HealthResult]
"""What a health probe's HTTP status says about the backend."""

CREDENTIAL_STATUSES = frozenset({401, 403})
"""The statuses with which a backend refuses the gateway's own key."""


_Reader = Callable[[RawResponse], Awaitable[bytes]]
_Sent = tuple[bytes, Mapping[str, str] | None]
"""A request's body and its own headers (None: only the adapter's)."""


def backend_session(connector: aiohttp.BaseConnector) -> aiohttp.ClientSession:
    """An aiohttp session for talking to backends: no proxy settings from the environment,
    statuses left to the caller, and no cookie jar (a backend's Set-Cookie must not ride
    along on every later client's request; filtering a jar per request costs CPU too)."""
    import aiohttp

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
    read the answer and cannot read a redirect it does not follow. A 404 that the adapter
    maps to a plain UpstreamStatusError becomes an UpstreamNotFound naming the path asked
    and `provider_url`, the base URL of the service the adapter speaks to (if it has one).
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
        provider_url: str | None = None,
        overridable: frozenset[str] = frozenset(),
    ) -> None:
        """`overridable`: names of `headers` that a request's own headers may replace (a
        client's `anthropic-version`); every other one of `headers` wins over them."""
        self.name = name
        self._provider_url = provider_url
        self._errors = UpstreamErrors(name)
        self._headers = dict(headers)
        self._defaults = {k: v for k, v in headers.items() if k.lower() in overridable}
        self._fixed = {k: v for k, v in headers.items() if k.lower() not in overridable}
        self._fixed_names = frozenset(name.lower() for name in self._fixed)
        self._status_error = status_error
        self._secret = secret
        self._max_connections = max_connections
        self._idle_keepalive_s = idle_keepalive_s
        self._error_from_status = error_from_status
        self._session: aiohttp.ClientSession | None = None
        self._h1 = (
            H1Pool(self._fixed, max_connections=max_connections, idle_keepalive_s=idle_keepalive_s)
            if http_client == "lean"
            else None
        )

    @property
    def session(self) -> aiohttp.ClientSession:
        # Created lazily: a session binds to the running loop.
        if self._session is None:
            import aiohttp

            connector = aiohttp.TCPConnector(
                limit=self._max_connections,
                limit_per_host=0,
                keepalive_timeout=self._idle_keepalive_s,
            )
            self._session = backend_session(connector)
        return self._session

    async def send(
        self, url: str, body: bytes, deadlines: Deadlines, extra: Mapping[str, str] | None = None
    ) -> UpstreamResponse:
        """POST `body` and read the whole answer, all within the first-byte deadline and
        `deadlines.max_body_bytes`; `extra`: this request's own headers (a trace's)."""
        read = partial(_whole, name=self.name, max_bytes=deadlines.max_body_bytes)
        response, answer = await self._exchange(url, (body, extra), deadlines, read)
        response.release()
        signal = rate_limit_signal(response.headers)
        return UpstreamResponse(response.status, content_type(response), answer, signal)

    async def open_stream(
        self, url: str, body: bytes, deadlines: Deadlines, extra: Mapping[str, str] | None = None
    ) -> HttpStream:
        """POST `body` and wait, within the first-byte deadline, for the first bytes."""
        response, first = await self._exchange(url, (body, extra), deadlines, _first_bytes)
        if not first:
            response.close()
            raise UpstreamProtocolError(
                f"backend {self.name} closed the stream before sending data", backend=self.name
            )
        return HttpStream(
            self.name,
            self._errors,
            response,
            first,
            deadlines.between_chunks_s,
            deadlines.max_stream_bytes,
        )

    async def probe(
        self, url: str, timeout_s: float, judge: HealthJudge, *, allow_redirects: bool = False
    ) -> HealthResult:
        """GET `url`: `judge` reads the status; getting none at all is unhealthy."""
        if self._h1 is not None and url.startswith("http://"):
            return await self._probe_lean(url, timeout_s, judge, allow_redirects)
        import aiohttp

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

    async def _probe_lean(
        self, url: str, timeout_s: float, judge: HealthJudge, follow: bool
    ) -> HealthResult:
        """The probe on the lean client, following plain-HTTP redirects as aiohttp does
        (at most `_MAX_REDIRECTS`); one to `https://` goes on through aiohttp."""
        assert self._h1 is not None
        try:
            with self.map_upstream_errors():
                async with asyncio.timeout(timeout_s):
                    for _ in range(_MAX_REDIRECTS + 1):
                        response = await self._h1.get(url, timeout_s, self._defaults)
                        response.close()  # only the status and the location matter
                        location = response.headers.get("location")
                        if not (follow and response.status in _REDIRECTS and location):
                            break
                        url = urljoin(url, location)
                        if not url.startswith("http://"):
                            return await self.probe(url, timeout_s, judge, allow_redirects=True)
                    else:
                        return HealthResult(False, "probe failed: too many redirects")
        except UpstreamError as exc:
            return HealthResult(False, f"probe failed: {exc.message}")
        return judge(response.status)

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
        self, url: str, sent: _Sent, deadlines: Deadlines, read: _Reader
    ) -> tuple[RawResponse, bytes]:
        """POST, check the status and `read`, all within the first-byte deadline; the
        response is closed when any of it fails."""
        with self.map_upstream_errors():
            async with asyncio.timeout(deadlines.first_byte_s):
                response = await self._post(url, sent, deadlines)
                try:
                    await self._raise_for_status(response, url)
                    return response, await read(response)
                except BaseException:
                    response.close()
                    raise

    async def _post(self, url: str, sent: _Sent, deadlines: Deadlines) -> RawResponse:
        # No socket read timeout: aiohttp would re-arm a timer on every read. The first
        # byte is bounded by the caller, the gaps after it by the stream's watchdog.
        body, extra = sent
        own = self._own_headers(extra)
        if self._h1 is not None and url.startswith("http://"):
            return await self._h1.post(url, body, deadlines.connect_s, own)
        import aiohttp

        return await self.session.post(
            url,
            data=body,
            headers={**own, **self._fixed} if own else self._headers,
            timeout=aiohttp.ClientTimeout(sock_connect=deadlines.connect_s),
            allow_redirects=False,
        )

    def _own_headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        """A request's headers on top of the overridable defaults, less any the adapter
        fixes (its credentials among them: never replaced, never sent twice)."""
        if not extra:
            return self._defaults
        merged = {**self._defaults, **extra}
        return {k: v for k, v in merged.items() if k.lower() not in self._fixed_names}

    async def _raise_for_status(self, response: RawResponse, url: str) -> None:
        status = response.status
        if status < self._error_from_status:
            return
        body = await response.content.read(_MAX_ERROR_BODY_BYTES)
        signal = rate_limit_signal(response.headers)
        retry_after = signal.retry_after_s if signal is not None else None
        error = self._status_error(status, self._scrub(body), retry_after)
        if isinstance(error, UpstreamStatusError) and error.rate_limit is None:
            error.rate_limit = signal
        if status == 404 and type(error) is UpstreamStatusError:
            # Only the path, never the query: Azure's api-version, or a key a URL may hold.
            asked = self._scrub(f"POST {urlsplit(url).path}".encode()).decode()
            error = UpstreamNotFound.of(error, asked, self._provider_url)
        raise error

    def _scrub(self, data: bytes) -> bytes:
        if self._secret and self._secret.encode() in data:
            return data.replace(self._secret.encode(), b"[redacted]")
        return data


async def _whole(response: RawResponse, *, name: str, max_bytes: int) -> bytes:
    """The whole body, failing as soon as it is known to pass `max_bytes`."""
    length = response.content_length
    if length is not None and length <= max_bytes:
        return await response.read()
    if length is not None:
        raise too_large(name, "answer", max_bytes)
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > max_bytes:
            raise too_large(name, "answer", max_bytes)
        parts.append(chunk)
    return b"".join(parts)


async def _first_bytes(response: RawResponse) -> bytes:
    return await response.content.readany()


def check_json_answer(response: UpstreamResponse, name: str) -> UpstreamResponse:
    """`response` with its parsed body kept (`document`); UpstreamProtocolError (retryable)
    for a successful answer that is not JSON, whatever its content type says: a backend or
    proxy that cut or garbled it, or a proxy's HTML page. Relaying it would be a 200 the
    client cannot read."""
    if response.status >= 300:
        return response
    try:
        document = orjson.loads(response.body)
    except orjson.JSONDecodeError:
        raise UpstreamProtocolError(
            f"backend {name} answered {response.status} with a body that is not JSON",
            backend=name,
        ) from None
    # Made directly: `dataclasses.replace` introspects the fields on every call.
    return UpstreamResponse(
        response.status, response.content_type, response.body, response.rate_limit, document
    )


def credentials_refused(status: int) -> HealthResult:
    """The probe's verdict on a backend that refused the gateway's key: down until fixed."""
    return HealthResult(False, f"probe: credentials refused (HTTP {status})")

"""Adapter for OpenAI-compatible servers: vLLM, SGLang, llama.cpp, Ollama's /v1, clouds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from time import time

import httpx

from gateway.errors import (
    UpstreamConnectError,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamStatusError,
    UpstreamTimeout,
)
from providers.base import (
    Deadlines,
    HealthResult,
    UpstreamRequest,
    UpstreamResponse,
    upstream_headers,
)

_MAX_ERROR_BODY_BYTES = 64 * 1024


class OpenAICompatibleProvider:
    """One pooled keep-alive client per backend."""

    def __init__(
        self, name: str, base_url: str, api_key: str | None, *, max_connections: int = 256
    ) -> None:
        self.name = name
        self._api_key = api_key
        self._headers = upstream_headers(api_key)
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=self._headers,
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            trust_env=False,
            follow_redirects=False,
        )

    async def send(self, request: UpstreamRequest, deadlines: Deadlines) -> UpstreamResponse:
        with self.map_upstream_errors():
            async with asyncio.timeout(deadlines.first_byte_s):
                response = await self._client.send(
                    self._build(request, deadlines, read_s=None), stream=True
                )
                try:
                    await self._raise_for_status(response)
                    body = await response.aread()
                finally:
                    await response.aclose()
        return UpstreamResponse(response.status_code, _content_type(response), body)

    async def open_stream(self, request: UpstreamRequest, deadlines: Deadlines) -> _HttpxStream:
        # httpx's read timeout is per socket read; it guards the gaps between chunks when it
        # is not shorter than the first-byte wait, otherwise we time the gaps ourselves.
        gap_by_httpx = deadlines.between_chunks_s >= deadlines.first_byte_s
        read_s = deadlines.between_chunks_s if gap_by_httpx else None
        with self.map_upstream_errors():
            async with asyncio.timeout(deadlines.first_byte_s):
                response = await self._client.send(
                    self._build(request, deadlines, read_s=read_s), stream=True
                )
                try:
                    await self._raise_for_status(response)
                    chunks = response.aiter_raw()
                    first = await _first_nonempty(chunks)
                except BaseException:
                    await response.aclose()
                    raise
        gap_s = None if gap_by_httpx else deadlines.between_chunks_s
        return _HttpxStream(self, response, chunks, first, gap_s)

    async def health(self, timeout_s: float) -> HealthResult:
        try:
            with self.map_upstream_errors():
                response = await self._client.get("/models", timeout=timeout_s)
        except UpstreamError as exc:
            return HealthResult(False, f"probe failed: {exc.message}")
        if response.status_code >= 500:
            return HealthResult(False, f"probe got HTTP {response.status_code}")
        return HealthResult(True, f"probe ok (HTTP {response.status_code})")

    async def close(self) -> None:
        await self._client.aclose()

    def _build(
        self, request: UpstreamRequest, deadlines: Deadlines, read_s: float | None
    ) -> httpx.Request:
        timeout = httpx.Timeout(connect=deadlines.connect_s, read=read_s, write=30.0, pool=None)
        return self._client.build_request(
            "POST", request.path, content=request.body, timeout=timeout
        )

    async def _raise_for_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if status < 400:
            return
        body = await _read_capped(response)
        retry_after = _retry_after_s(response.headers.get("retry-after"))
        if status in (401, 403):
            # The backend refused the gateway's own credentials: not the client's fault, and
            # the upstream body may quote the key, so it is never relayed.
            raise UpstreamStatusError(
                f"backend {self.name} rejected the gateway's credentials (HTTP {status})",
                backend=self.name,
                upstream_status=502,
            )
        raise UpstreamStatusError(
            f"backend {self.name} answered HTTP {status}",
            backend=self.name,
            upstream_status=status,
            upstream_body=self._scrub(body),
            retry_after_s=retry_after,
        )

    def _scrub(self, data: bytes) -> bytes:
        if self._api_key and self._api_key.encode() in data:
            return data.replace(self._api_key.encode(), b"[redacted]")
        return data

    @contextmanager
    def map_upstream_errors(self) -> Iterator[None]:
        """Turn transport exceptions into the gateway's UpstreamError tree."""
        try:
            yield
        except UpstreamError:
            raise
        except (TimeoutError, httpx.TimeoutException) as exc:
            phase = "connect" if isinstance(exc, httpx.ConnectTimeout) else "response"
            raise UpstreamTimeout(
                f"backend {self.name} timed out ({phase})", backend=self.name
            ) from None
        except (httpx.ConnectError, httpx.PoolTimeout) as exc:
            raise UpstreamConnectError(
                f"cannot connect to backend {self.name}: {type(exc).__name__}", backend=self.name
            ) from None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            raise UpstreamProtocolError(
                f"backend {self.name} broke the connection: {type(exc).__name__}",
                backend=self.name,
            ) from None
        except httpx.HTTPError as exc:
            raise UpstreamProtocolError(
                f"backend {self.name} transport error: {type(exc).__name__}", backend=self.name
            ) from None


class _HttpxStream:
    def __init__(
        self,
        provider: OpenAICompatibleProvider,
        response: httpx.Response,
        chunks: AsyncIterator[bytes],
        first_chunk: bytes,
        gap_s: float | None,
    ) -> None:
        self._provider = provider
        self._response = response
        self._chunks = chunks
        self._gap_s = gap_s
        self.first_chunk = first_chunk
        self.content_type = _content_type(response)

    async def rest(self) -> AsyncIterator[bytes]:
        with self._provider.map_upstream_errors():
            if self._gap_s is None:
                async for chunk in self._chunks:
                    yield chunk
                return
            while True:
                try:
                    async with asyncio.timeout(self._gap_s):
                        chunk = await anext(self._chunks)
                except StopAsyncIteration:
                    return
                yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()


async def _first_nonempty(chunks: AsyncIterator[bytes]) -> bytes:
    async for chunk in chunks:
        if chunk:
            return chunk
    raise UpstreamProtocolError("backend closed the stream before sending any data")


async def _read_capped(response: httpx.Response) -> bytes:
    data = bytearray()
    async for chunk in response.aiter_raw():
        data += chunk
        if len(data) >= _MAX_ERROR_BODY_BYTES:
            break
    return bytes(data[:_MAX_ERROR_BODY_BYTES])


def _content_type(response: httpx.Response) -> str:
    content_type: str = response.headers.get("content-type", "application/json")
    return content_type


def _retry_after_s(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time())
    except (TypeError, ValueError):
        return None

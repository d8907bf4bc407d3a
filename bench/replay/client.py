"""A cheap streaming client: sends trace requests and times TTFT and the end of each stream.

Only what is measured is parsed: chunks are decoded until the first token, after that a
chunk is only decoded when its bytes mention `usage` or `error`. A request's priority class
and tenant go out as headers; the gateway's admission headers (queue wait, how it was
admitted) and a refusal's `error.code` come back into the result.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson

from .schedule import RequestResult
from .trace import Trace, TraceRequest

BACKEND_HEADER = "x-switchyard-backend"
DECISION_HEADER = "x-switchyard-decision"
SESSION_HEADER = "x-session-id"
PRIORITY_HEADER = "x-switchyard-priority"
TENANT_HEADER = "x-switchyard-tenant"
QUEUE_MS_HEADER = "x-switchyard-queue-ms"
ADMISSION_HEADER = "x-switchyard-admission"
_ERROR_BODY_BYTES = 300
_NULL_USAGE = (b'"usage":null', b'"usage": null')


class _Stream:
    """What has been read from one SSE stream so far."""

    __slots__ = ("done", "error", "error_code", "first_token_at", "timings", "usage")

    def __init__(self) -> None:
        self.first_token_at: float | None = None
        self.usage: dict[str, Any] | None = None
        self.timings: dict[str, Any] | None = None
        self.error: str | None = None
        self.error_code: str | None = None
        self.done = False

    def feed(self, payload: bytes) -> None:
        if payload == b"[DONE]":
            self.done = True
            return
        if self.first_token_at is not None and not _worth_parsing(payload):
            return
        event = orjson.loads(payload)
        if not isinstance(event, dict):
            return
        if event.get("error") is not None:
            self.error = f"error event: {_error_message(event)}"
            self.error_code = _error_code(event)
        usage = event.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
            timings = event.get("timings")  # llama.cpp's, beside the usage
            self.timings = timings if isinstance(timings, dict) else None
        if self.first_token_at is None and _carries_token(event):
            self.first_token_at = time.perf_counter()


def _worth_parsing(payload: bytes) -> bool:
    if b'"error"' in payload:
        return True
    return b'"usage"' in payload and not any(null in payload for null in _NULL_USAGE)


def _carries_token(event: dict[str, Any]) -> bool:
    """A choice delta with content, a tool call, or reasoning text: the first token."""
    for choice in event.get("choices") or ():
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and (
            delta.get("content") or delta.get("tool_calls") or delta.get("reasoning_content")
        ):
            return True
    return False


def _error_message(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message", error))[:_ERROR_BODY_BYTES]
    return str(error if error is not None else body)[:_ERROR_BODY_BYTES]


def _error_code(body: Any) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def new_session(request_timeout_s: float) -> aiohttp.ClientSession:
    """One pooled session for the whole replay; no proxies from the environment."""
    connector = aiohttp.TCPConnector(limit=4096, limit_per_host=0, ttl_dns_cache=None)
    timeout = aiohttp.ClientTimeout(total=request_timeout_s, sock_connect=10)
    return aiohttp.ClientSession(
        connector=connector, timeout=timeout, trust_env=False, auto_decompress=False
    )


class HttpTransport:
    """Posts chat completions to `base_url` (ending in /v1) as `model`."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        trace: Trace,
        *,
        model: str,
        send_session: bool = False,
    ) -> None:
        self._session = session
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._trace = trace
        self._model = model
        self._send_session = send_session

    async def send(self, request: TraceRequest) -> RequestResult:
        body = self._trace.body(request, self._model)
        headers = {"content-type": "application/json"}
        if self._send_session and request.session is not None:
            headers[SESSION_HEADER] = request.session
        if request.priority is not None:
            headers[PRIORITY_HEADER] = request.priority
        if request.tenant is not None:
            headers[TENANT_HEADER] = request.tenant
        result = RequestResult(request.id, ok=False, sent_at=time.perf_counter(), done_at=0.0)
        try:
            async with self._session.post(self._url, data=body, headers=headers) as response:
                result.status = response.status
                _take_headers(response.headers, result)
                await _read_response(response, request.stream, result)
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            result.ok = False
            result.error = f"{type(exc).__name__}: {exc}"[:_ERROR_BODY_BYTES]
        result.done_at = time.perf_counter()
        return result


def _take_headers(headers: Mapping[str, str], result: RequestResult) -> None:
    result.backend = headers.get(BACKEND_HEADER)
    result.decision_id = headers.get(DECISION_HEADER)
    result.admission = headers.get(ADMISSION_HEADER)
    queue_ms = headers.get(QUEUE_MS_HEADER)
    if queue_ms is not None:
        result.queue_ms = _milliseconds(queue_ms)


def _milliseconds(text: str) -> float | None:
    """A header's duration; None for one that is not a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


async def _read_response(
    response: aiohttp.ClientResponse, stream: bool, result: RequestResult
) -> None:
    if response.status != 200:
        message, result.error_code = _refusal(await response.read())
        # A refusal with a code is one kind whatever its message (flow control's say
        # which backend predicted what, different for every request).
        code = result.error_code
        result.error = (
            f"HTTP {response.status} {code}" if code else f"HTTP {response.status}: {message}"
        )
        return
    if not stream:
        payload = orjson.loads(await response.read())
        result.first_token_at = time.perf_counter()
        body = payload if isinstance(payload, dict) else {}
        _take_usage(result, body.get("usage"), body.get("timings"))
        result.ok = True
        return
    state = _Stream()
    async for line in response.content:
        if line.startswith(b"data:"):
            state.feed(line[5:].strip())
            if state.done or state.error:
                break
    result.first_token_at = state.first_token_at
    _take_usage(result, state.usage, state.timings)
    result.error = state.error or (None if state.done else "stream ended without [DONE]")
    result.error_code = state.error_code
    result.ok = result.error is None


def _refusal(raw: bytes) -> tuple[str, str | None]:
    """An error body's message and OpenAI `error.code`, decoded once."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw[:_ERROR_BODY_BYTES].decode(errors="replace"), None
    return _error_message(body), _error_code(body)


def _take_usage(result: RequestResult, usage: Any, timings: Any = None) -> None:
    if isinstance(timings, dict):
        result.timings = timings
    if not isinstance(usage, dict):
        return
    result.prompt_tokens = _int(usage.get("prompt_tokens"))
    result.completion_tokens = _int(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict):
        result.cached_tokens = _int(details.get("cached_tokens"))
        result.cache_write_tokens = _int(details.get("cache_write_tokens"))
        result.cache_write_1h_tokens = _int(details.get("cache_write_1h_tokens"))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


async def fetch_json(session: aiohttp.ClientSession, url: str) -> Any:
    """GET a JSON document; None when it is missing or not JSON (optional endpoints)."""
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=10)) as response:
            if response.status != 200:
                return None
            return orjson.loads(await response.read())
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
        return None


async def fetch_all(
    session: aiohttp.ClientSession, urls: list[str], concurrency: int = 16
) -> list[Any]:
    """Many optional GETs, `concurrency` at a time, results in order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(url: str) -> Any:
        async with gate:
            return await fetch_json(session, url)

    return list(await asyncio.gather(*(one(url) for url in urls)))

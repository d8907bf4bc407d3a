"""The proxy path: one OpenAI request from body to relayed response.

Served straight from the ASGI entry point (no framework middleware on the hot path). Once
the body is read, one watcher task waits for the client to disconnect and cancels the
request, wherever it is: choosing, waiting for a backend, or relaying a stream. Every
resource (in-flight slots, upstream connections) is released in `finally` blocks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gateway.config import RouteConfig
from gateway.decisions import DecisionRecord
from gateway.errors import PayloadTooLarge, SwitchyardError
from gateway.http.responses import error_response
from gateway.http.streaming import RelayResponse, StreamOutcome, relay, wait_disconnect
from gateway.http.wire import check_length, parse_body, traits_of, upstream_body
from gateway.prefix.feedback import Usage, learn, usage_from_body
from gateway.quality.collect import CollectedResponse, StreamCollector, collect_body
from gateway.quality.passive import RequestContext, request_context
from gateway.routing import RequestTraits
from gateway.service import Gateway
from gateway.telemetry.record import RequestRecord
from policies.base import Endpoint
from providers.base import UpstreamRequest

logger = logging.getLogger("switchyard")

ROUTES: dict[str, Endpoint] = {
    "/v1/chat/completions": "chat.completions",
    "/v1/completions": "completions",
    "/v1/embeddings": "embeddings",
}
_UPSTREAM_PATHS: dict[Endpoint, str] = {
    "chat.completions": "/chat/completions",
    "completions": "/completions",
    "embeddings": "/embeddings",
}


async def serve_proxy(
    gateway: Gateway, endpoint: Endpoint, scope: Scope, receive: Receive, send: Send
) -> None:
    request = Request(scope, receive, send)
    started = time.monotonic()
    try:
        key_id = gateway.authorize(request.headers.get("authorization"))
        raw = await read_body(request, gateway.config.server.max_body_bytes)
    except SwitchyardError as exc:
        gateway.telemetry.rejected(exc.code or exc.type)
        await error_response(exc)(scope, receive, send)
        return
    task = asyncio.current_task()
    assert task is not None
    left = asyncio.Event()

    async def watch() -> None:
        await wait_disconnect(receive)
        left.set()
        task.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        try:
            response = await _respond(gateway, request, endpoint, raw, Arrival(started, key_id))
        except Exception:
            logger.exception("unhandled error on POST %s", scope["path"])
            response = error_response(SwitchyardError("internal error in the gateway"))
        await response(scope, receive, send)
    except asyncio.CancelledError:
        if not left.is_set():
            raise
        task.uncancel()  # the client left; nothing to answer
    finally:
        watcher.cancel()


async def read_body(request: Request, max_bytes: int) -> bytes:
    check_length(request.headers.get("content-length"), max_bytes)
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise PayloadTooLarge(f"request body exceeds the limit of {max_bytes} bytes")
        parts.append(chunk)
    return b"".join(parts)


@dataclass(slots=True)
class Arrival:
    """What the request's record needs that the decision does not carry."""

    started: float
    key_id: str | None
    route: str = ""
    endpoint: str = ""
    stream: bool = False
    body: dict[str, Any] | None = None


async def _respond(
    gateway: Gateway, request: Request, endpoint: Endpoint, raw: bytes, arrival: Arrival
) -> Response:
    try:
        body, head = parse_body(raw, endpoint)
        route = gateway.router.route(head.model)
        traits = traits_of(endpoint, body, head, request.headers)
        decision, work = gateway.router.decide(route, traits)
    except SwitchyardError as exc:
        gateway.telemetry.rejected(exc.code or exc.type)
        return error_response(exc)
    record = DecisionRecord(decision, work)
    gateway.ring.add(record)
    arrival.route, arrival.endpoint, arrival.stream = route.name, endpoint, traits.stream
    if gateway.config.store.store_prompts:
        arrival.body = body
    context = _quality_context(gateway, record, route, body, traits)
    forwarded = upstream_body(raw, body, head.model, route.model)
    upstream = UpstreamRequest(_UPSTREAM_PATHS[endpoint], forwarded, traits.stream)
    headers = {"x-switchyard-decision": decision.id}
    try:
        if traits.stream:
            return await _open_stream(gateway, record, upstream, headers, arrival, context)
        return await _send(gateway, record, upstream, headers, arrival, context)
    except SwitchyardError as exc:
        _finish(gateway, record, arrival, exc.status, None, exc.code)
        _observe(gateway, record, context)
        return error_response(exc, headers)
    except asyncio.CancelledError:
        _finish(gateway, record, arrival, 499, None, "client_disconnected")
        _observe(gateway, record, context)
        raise


async def _send(
    gateway: Gateway,
    record: DecisionRecord,
    upstream: UpstreamRequest,
    headers: dict[str, str],
    arrival: Arrival,
    context: RequestContext | None,
) -> Response:
    deadline = gateway.dispatcher.deadline()
    name, response = await gateway.dispatcher.send(record, upstream, deadline)
    headers["x-switchyard-backend"] = name
    usage = usage_from_body(response.body)
    learn(gateway.router, gateway.state, name, record.work, usage)
    _finish(gateway, record, arrival, response.status, name, None, usage=usage)
    if context is not None:
        _observe(gateway, record, context, name, partial(collect_body, response.body))
    return Response(response.body, response.status, headers, response.content_type)


async def _open_stream(
    gateway: Gateway,
    record: DecisionRecord,
    upstream: UpstreamRequest,
    headers: dict[str, str],
    arrival: Arrival,
    context: RequestContext | None,
) -> Response:
    deadline = gateway.dispatcher.deadline()
    name, stream = await gateway.dispatcher.open_stream(record, upstream, deadline)
    headers["x-switchyard-backend"] = name
    headers["cache-control"] = "no-cache"
    outcome = StreamOutcome(StreamCollector() if context is not None else None)

    return RelayResponse(
        relay(stream, deadline, outcome),
        media_type=stream.content_type,
        headers=headers,
        on_close=partial(_stream_closed, gateway, record, arrival, context, name, outcome),
    )


def _stream_closed(
    gateway: Gateway,
    record: DecisionRecord,
    arrival: Arrival,
    context: RequestContext | None,
    name: str,
    outcome: StreamOutcome,
) -> None:
    """A relayed stream ended (done, broken or abandoned): free the backend, learn from
    what it reported, and record the request."""
    gateway.state.decode_ended(name)
    gateway.state.release(name)
    usage = outcome.tap.usage()
    first = outcome.first_chunk_at
    decode_s = outcome.last_chunk_at - first if first is not None else None
    if decode_s is not None:
        learn(gateway.router, gateway.state, name, record.work, usage, decode_s)
    if outcome.error is None and outcome.status == "ok":
        gateway.state.record_success(name)
    elif outcome.error is not None and outcome.error.retryable:
        gateway.state.record_failure(name, outcome.status)
    error = None if outcome.status == "ok" else outcome.status
    ttft = first - arrival.started if first is not None else None
    _finish(
        gateway, record, arrival, 200, name, error,
        chunks=outcome.chunks, usage=usage, ttft_s=ttft, decode_s=decode_s,
    )  # fmt: skip
    if outcome.collector is not None:
        # The quality signals time the backend: its first byte, not the gateway's.
        upstream_ttft = record.attempts[-1].duration_ms / 1000 if record.attempts else None
        collect = outcome.collector.finish
        _observe(gateway, record, context, name, collect, error, upstream_ttft, decode_s or 0.0)


def _quality_context(
    gateway: Gateway,
    record: DecisionRecord,
    route: RouteConfig,
    body: dict[str, Any],
    traits: RequestTraits,
) -> RequestContext | None:
    """What the quality signals need of the request; None when this one is not inspected."""
    if gateway.quality is None:
        return None
    share = gateway.config.quality.inspect_share
    if share < 1.0 and int(record.decision.id[:8], 16) >= share * 2**32:
        return None
    return request_context(
        route.model,
        body,
        max_tokens=traits.max_tokens,
        prompt_tokens=record.work.prompt_tokens,
        ttft_target_ms=traits.ttft_slo_ms or route.sla.ttft_ms,
        tpot_target_ms=traits.tpot_slo_ms or route.sla.tpot_ms,
    )


def _observe(
    gateway: Gateway,
    record: DecisionRecord,
    context: RequestContext | None,
    served_by: str | None = None,
    collect: Callable[[], CollectedResponse] | None = None,
    error: str | None = None,
    ttft_s: float | None = None,
    decode_s: float | None = None,
) -> None:
    """Failed attempts and the response become quality evidence on the next loop turn,
    after the response has gone out: parsing the response happens there too."""
    recorder = gateway.quality
    if recorder is None or context is None:
        return

    def observe() -> None:
        for attempt in record.attempts:
            if attempt.outcome != "ok":
                recorder.failure(context, attempt.backend, attempt.outcome)
        if served_by is not None and collect is not None:
            recorder.response(
                context, served_by, collect(), error_code=error, ttft_s=ttft_s, decode_s=decode_s
            )

    asyncio.get_running_loop().call_soon(recorder.guarded, observe)


def _finish(
    gateway: Gateway,
    record: DecisionRecord,
    arrival: Arrival,
    status: int,
    served_by: str | None,
    error: str | None,
    *,
    chunks: int | None = None,
    usage: Usage | None = None,
    ttft_s: float | None = None,
    decode_s: float | None = None,
) -> None:
    record.status = status
    record.served_by = served_by
    elapsed = time.monotonic() - arrival.started
    gateway.telemetry.pipe.emit(
        RequestRecord(
            at=time.time() - elapsed,
            route=arrival.route,
            endpoint=arrival.endpoint,
            stream=arrival.stream,
            key_id=arrival.key_id,
            decision=record,
            status=status,
            error=error,
            backend=served_by,
            e2e_s=elapsed,
            ttft_s=ttft_s,
            decode_s=decode_s,
            usage=usage,
            chunks=chunks,
            body=arrival.body,
        )
    )

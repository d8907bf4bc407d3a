"""The proxy path, forward: one OpenAI request from body to relayed response.

Ingress (auth, body, parse), decide (route and policy decision), dispatch (the ranked
candidates, one lease at a time) and relay, in that order, all in this module; the way
back (freeing the backend, learning, recording) is `Exchange`'s, in one place.

Served straight from the ASGI entry point (no framework middleware on the hot path). Once
the body is read, one watcher task waits for the client to disconnect and cancels the
request, wherever it is: choosing, waiting for a backend, or relaying a stream.
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gateway.config import RouteConfig
from gateway.decisions import DecisionRecord
from gateway.errors import PayloadTooLarge, SwitchyardError
from gateway.http.exchange import Exchange
from gateway.http.responses import error_response
from gateway.http.streaming import RelayResponse, StreamOutcome, relay, wait_disconnect
from gateway.http.wire import check_length, parse_body, traits_of, upstream_body
from gateway.quality.collect import StreamCollector, collect_body
from gateway.quality.passive import RequestContext, request_context
from gateway.routing import RequestTraits
from gateway.service import Gateway
from policies.snapshot import Endpoint
from providers.base import UpstreamRequest
from providers.usage import usage_from_body

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
    exchange = Exchange(gateway.telemetry.pipe, gateway.quality, started, key_id, endpoint)
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
            response = await _respond(gateway, request, exchange, raw)
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


async def _respond(gateway: Gateway, request: Request, exchange: Exchange, raw: bytes) -> Response:
    endpoint = exchange.endpoint
    try:
        body, head = parse_body(raw, endpoint)
        route = gateway.router.route(head.model)
        traits = traits_of(endpoint, body, head, request.headers)
        decision, work = gateway.router.decide(route, traits)
    except SwitchyardError as exc:
        gateway.telemetry.rejected(exc.code or exc.type)
        return error_response(exc)
    record = exchange.record = DecisionRecord(decision, work)
    gateway.ring.add(record)
    exchange.route, exchange.stream = route.name, traits.stream
    if gateway.config.store.store_prompts:
        exchange.body = body
    exchange.quality = _quality_context(gateway, record, route, body, traits)
    forwarded = upstream_body(raw, body, head.model, route.model)
    upstream = UpstreamRequest(_UPSTREAM_PATHS[endpoint], forwarded, traits.stream)
    headers = {"x-switchyard-decision": decision.id}
    try:
        if traits.stream:
            return await _open_stream(gateway, exchange, upstream, headers)
        return await _send(gateway, exchange, upstream, headers)
    except SwitchyardError as exc:
        exchange.failed(exc.status, exc.code)
        return error_response(exc, headers)
    except asyncio.CancelledError:
        if not exchange.finished:
            exchange.failed(499, "client_disconnected")
        raise


async def _send(
    gateway: Gateway, exchange: Exchange, upstream: UpstreamRequest, headers: dict[str, str]
) -> Response:
    assert exchange.record is not None
    deadline = gateway.dispatcher.deadline()
    lease, response = await gateway.dispatcher.send(exchange.record, upstream, deadline)
    exchange.lease = lease
    headers["x-switchyard-backend"] = lease.backend
    usage = usage_from_body(response.body)
    exchange.answered(response.status, usage, partial(collect_body, response.body))
    return Response(response.body, response.status, headers, response.content_type)


async def _open_stream(
    gateway: Gateway, exchange: Exchange, upstream: UpstreamRequest, headers: dict[str, str]
) -> Response:
    assert exchange.record is not None
    deadline = gateway.dispatcher.deadline()
    lease, stream = await gateway.dispatcher.open_stream(exchange.record, upstream, deadline)
    exchange.lease = lease
    headers["x-switchyard-backend"] = lease.backend
    headers["cache-control"] = "no-cache"
    outcome = StreamOutcome(StreamCollector() if exchange.quality is not None else None)
    exchange.relayed = outcome
    return RelayResponse(
        relay(stream, deadline, outcome),
        media_type=stream.content_type,
        headers=headers,
        on_close=exchange.stream_closed,
    )


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

"""HTTP handlers: the OpenAI-compatible API, health, and decision lookup."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from gateway.decisions import DecisionRecord
from gateway.errors import NotFound, PayloadTooLarge, SwitchyardError, UpstreamStatusError
from gateway.feedback import learn, usage_from_body
from gateway.service import Gateway
from gateway.streaming import RelayResponse, StreamOutcome, relay, wait_disconnect
from gateway.wire import check_length, parse_body, traits_of, upstream_body
from policies.base import Endpoint
from providers.base import UpstreamRequest

T = TypeVar("T")
router = APIRouter()

_PATHS: dict[Endpoint, str] = {
    "chat.completions": "/chat/completions",
    "completions": "/completions",
    "embeddings": "/embeddings",
}


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status, headers, media_type="application/json")


def error_response(exc: SwitchyardError, headers: dict[str, str] | None = None) -> Response:
    merged = {**(headers or {}), **exc.headers()}
    if (
        isinstance(exc, UpstreamStatusError)
        and 400 <= exc.upstream_status < 500
        and exc.upstream_body
    ):
        # The backend's own 4xx explanation is what the client needs (context too long, ...).
        return Response(exc.upstream_body, exc.upstream_status, merged, "application/json")
    return Response(exc.json_bytes(), exc.status, merged, "application/json")


def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def chat_completions(request: Request) -> Response:
    return await _proxy(request, "chat.completions")


async def completions(request: Request) -> Response:
    return await _proxy(request, "completions")


async def embeddings(request: Request) -> Response:
    return await _proxy(request, "embeddings")


PROXY_ROUTES = {
    "/v1/chat/completions": chat_completions,
    "/v1/completions": completions,
    "/v1/embeddings": embeddings,
}


@router.get("/v1/models")
async def list_models(request: Request) -> Response:
    gateway = _gateway(request)
    gateway.authorize(request.headers.get("authorization"))
    data = [
        {"id": name, "object": "model", "created": 0, "owned_by": "switchyard"}
        for name in gateway.router.routes
    ]
    return json_response({"object": "list", "data": data})


@router.get("/healthz")
async def healthz() -> Response:
    return json_response({"status": "ok"})


@router.get("/readyz")
async def readyz(request: Request) -> Response:
    """Unauthenticated, for load balancers: counts only; details need a key."""
    backends = _gateway(request).state.describe()
    healthy = sum(1 for b in backends if b["healthy"])
    body = {
        "status": "ready" if healthy else "unavailable",
        "backends_healthy": healthy,
        "backends_total": len(backends),
    }
    return json_response(body, 200 if healthy else 503)


@router.get("/v1/switchyard/decisions/{decision_id}")
async def get_decision(request: Request, decision_id: str) -> Response:
    gateway = _gateway(request)
    gateway.authorize(request.headers.get("authorization"))
    record = gateway.ring.get(decision_id)
    if record is None:
        raise NotFound(
            f"decision {decision_id!r} is unknown or has left the ring", code="not_found"
        )
    return json_response(record.to_dict())


@router.get("/v1/switchyard/backends")
async def get_backends(request: Request) -> Response:
    gateway = _gateway(request)
    gateway.authorize(request.headers.get("authorization"))
    return json_response({"backends": gateway.state.describe()})


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


async def _proxy(request: Request, endpoint: Endpoint) -> Response:
    gateway = _gateway(request)
    started = time.monotonic()
    gateway.authorize(request.headers.get("authorization"))
    raw = await read_body(request, gateway.config.server.max_body_bytes)
    body, head = parse_body(raw, endpoint)
    route = gateway.router.route(head.model)
    traits = traits_of(endpoint, body, head, request.headers)
    decision, work = gateway.router.decide(route, traits)
    record = DecisionRecord(decision, work)
    gateway.ring.add(record)
    stream = traits.stream
    upstream = UpstreamRequest(
        _PATHS[endpoint], upstream_body(raw, body, head.model, route.model), stream
    )
    headers = {"x-switchyard-decision": decision.id}
    deadline = gateway.dispatcher.deadline()
    try:
        if stream:
            return await _open_stream(request, record, upstream, deadline, headers, started)
        sent = await _unless_client_leaves(
            request, gateway.dispatcher.send(record, upstream, deadline)
        )
    except SwitchyardError as exc:
        _finish(gateway, record, started, exc.status, None, exc.code)
        return error_response(exc, headers)
    if sent is None:
        _finish(gateway, record, started, 499, None, "client_disconnected")
        return Response(status_code=499)
    name, response = sent
    headers["x-switchyard-backend"] = name
    learn(gateway.router, gateway.state, name, work, usage_from_body(response.body))
    _finish(gateway, record, started, response.status, name, None)
    return Response(response.body, response.status, headers, response.content_type)


async def _unless_client_leaves(request: Request, work: Awaitable[T]) -> T | None:
    """Await `work`, cancelling it if the client disconnects first (None then)."""
    task = asyncio.current_task()
    assert task is not None
    left = False

    async def watch() -> None:
        nonlocal left
        await wait_disconnect(request.receive)
        left = True
        task.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        return await work
    except asyncio.CancelledError:
        if left:
            task.uncancel()
            return None
        raise
    finally:
        watcher.cancel()


async def _open_stream(
    request: Request,
    record: DecisionRecord,
    upstream: UpstreamRequest,
    deadline: float,
    headers: dict[str, str],
    started: float,
) -> Response:
    gateway = _gateway(request)
    opened = await _unless_client_leaves(
        request, gateway.dispatcher.open_stream(record, upstream, deadline)
    )
    if opened is None:
        _finish(gateway, record, started, 499, None, "client_disconnected")
        return Response(status_code=499)
    name, stream = opened
    headers["x-switchyard-backend"] = name
    headers["cache-control"] = "no-cache"
    outcome = StreamOutcome()

    def on_close() -> None:
        gateway.state.decode_ended(name)
        gateway.state.release(name)
        if outcome.first_chunk_at is not None:
            decode_s = outcome.last_chunk_at - outcome.first_chunk_at
            learn(gateway.router, gateway.state, name, record.work, outcome.tap.usage(), decode_s)
        if outcome.error is None and outcome.status == "ok":
            gateway.state.record_success(name)
        elif outcome.error is not None and outcome.error.retryable:
            gateway.state.record_failure(name, outcome.status)
        error = None if outcome.status == "ok" else outcome.status
        _finish(gateway, record, started, 200, name, error, chunks=outcome.chunks)

    return RelayResponse(
        relay(stream, deadline, outcome),
        media_type=stream.content_type,
        headers=headers,
        on_close=on_close,
    )


def _finish(
    gateway: Gateway,
    record: DecisionRecord,
    started: float,
    status: int,
    served_by: str | None,
    error: str | None,
    *,
    chunks: int | None = None,
) -> None:
    record.status = status
    record.served_by = served_by
    duration_ms = (time.monotonic() - started) * 1000.0

    def render() -> dict[str, Any]:
        line: dict[str, Any] = {
            "event": "request",
            "status": status,
            "backend": served_by,
            "duration_ms": round(duration_ms, 3),
            "error": error,
            "decision": record.to_dict(),
        }
        if chunks is not None:
            line["chunks"] = chunks
        return line

    gateway.log.emit(render)

"""The proxy path, forward: one request from body to relayed response.

Ingress (auth, body, parse), decide (route and policy decision), dispatch (the ranked
candidates, one lease at a time) and relay, in that order, all in this module; the way
back (freeing the backend, learning, recording) is `Exchange`'s, in one place. A path's
`Dialect` reads its client's format into the OpenAI request routed here and shapes the
answer and errors back (OpenAI's own changes nothing; `/v1/messages` is Anthropic's,
`/v1/responses` OpenAI's Responses API; `gateway.http.ingress` lists the paths).

Served straight from the ASGI entry point (no framework middleware on the hot path). Once
the body is read, one watcher task waits for the client to disconnect and cancels the
request, wherever it is: choosing, waiting for a backend, or relaying a stream.
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial
from typing import TYPE_CHECKING, Protocol

from starlette.requests import ClientDisconnect, Request

from gateway.config.bounds import check_depth
from gateway.errors import ClientError, PayloadTooLarge, SwitchyardError
from gateway.http.admission import admit, budgeted_route, keyed_traits, rejection_headers
from gateway.http.exchange import Exchange
from gateway.http.model_rename import renamed_response, served_model
from gateway.http.relay.streaming import wait_disconnect
from gateway.http.replies import deliver_answer, quality_context, relay_answer
from gateway.http.wire import (
    RequestHeaders,
    UpstreamBodies,
    check_length,
    parse_body,
    traits_of,
)
from gateway.routing.decisions import DecisionRecord

if TYPE_CHECKING:
    from collections.abc import Mapping

    from starlette.responses import Response
    from starlette.types import Receive, Scope, Send

    from gateway.admission.classes import Standing
    from gateway.admission.controller import Admission
    from gateway.cascade.cascades import Cascades
    from gateway.config.root import Config, RouteConfig
    from gateway.http.dialect import Dialect, Translation
    from gateway.http.ingress import ProxyPath
    from gateway.process.drain import Drain
    from gateway.quality.signals.passive import QualityRecorder
    from gateway.routing.decisions import DecisionRing
    from gateway.routing.dispatch import Dispatcher
    from gateway.routing.router import RoutePlan, Router
    from gateway.telemetry.wiring import Telemetry
    from gateway.tenancy.caller import Caller
    from gateway.tenancy.wiring import Tenancy
    from gateway.tracing.spans import Tracing
    from policies.snapshot import Endpoint


class Gateway(Protocol):
    """What the proxy path reads of the generation serving it (`gateway.process.service`
    builds one): the proxy depends on these parts, not on what builds and starts them."""

    @property
    def config(self) -> Config: ...
    @property
    def router(self) -> Router: ...
    @property
    def dispatcher(self) -> Dispatcher: ...
    @property
    def ring(self) -> DecisionRing: ...
    @property
    def telemetry(self) -> Telemetry: ...
    @property
    def tenancy(self) -> Tenancy: ...
    @property
    def quality(self) -> QualityRecorder | None: ...
    @property
    def drain(self) -> Drain: ...
    @property
    def admission(self) -> Admission | None: ...
    @property
    def cascades(self) -> Cascades | None: ...
    @property
    def tracing(self) -> Tracing | None: ...
    def authorize(self, authorization: str | None) -> Caller | None: ...


logger = logging.getLogger("switchyard")


_UPSTREAM_PATHS: dict[Endpoint, str] = {
    "chat.completions": "/chat/completions",
    "completions": "/completions",
    "embeddings": "/embeddings",
}


async def serve_proxy(
    gateway: Gateway, path: ProxyPath, scope: Scope, receive: Receive, send: Send
) -> None:
    started = time.monotonic()
    headers = RequestHeaders(scope["headers"])
    dialect = path.dialect
    caller: Caller | None = None
    try:
        caller = dialect.authorize(headers, gateway.authorize)
        raw = await receive_body(receive, headers, gateway.config.server.max_body_bytes)
    except SwitchyardError as exc:
        gateway.telemetry.refused(exc, path.ingress, started, caller)
        await dialect.error_response(exc)(scope, receive, send)
        return
    except ClientDisconnect:  # gone while sending its body: nothing to answer
        gone = SwitchyardError("the client left while sending its body", code="client_disconnected")
        gone.status = 499
        gateway.telemetry.refused(gone, path.ingress, started, caller)
        return
    key_id = caller.key_id if caller is not None else None
    exchange = Exchange(
        gateway.telemetry.pipe, gateway.quality, started, key_id, path.endpoint, path.ingress
    )
    exchange.caller = caller
    if gateway.tracing is not None:
        kinds = gateway.config.backend_kinds
        exchange.trace = gateway.tracing.request(scope["path"], path.endpoint, headers, kinds)
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
            response = await _respond(gateway, headers, exchange, dialect, raw)
        except Exception:
            logger.exception("unhandled error on POST %s", scope["path"])
            if exchange.trace is not None:  # ended once: a no-op when the exchange ended it
                exchange.trace.finish(500, "internal_error", None, None)
            response = dialect.error_response(SwitchyardError("internal error in the gateway"))
        await response(scope, receive, send)
    except asyncio.CancelledError:
        if not left.is_set():
            raise
        task.uncancel()  # the client left; nothing to answer
    finally:
        watcher.cancel()


async def receive_body(receive: Receive, headers: Mapping[str, str], max_bytes: int) -> bytes:
    """The whole request body straight from the ASGI `receive`, within `max_bytes`."""
    check_length(headers.get("content-length"), max_bytes)
    message = await receive()
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False) and message["type"] == "http.request":
        if len(body) > max_bytes:
            raise PayloadTooLarge(f"request body exceeds the limit of {max_bytes} bytes")
        return body  # the usual case: the whole body in one message
    parts: list[bytes] = [body]
    size = len(body)
    while True:
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        if size > max_bytes:
            raise PayloadTooLarge(f"request body exceeds the limit of {max_bytes} bytes")
        if not message.get("more_body", False):
            return b"".join(parts)
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        parts.append(chunk)


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The body of a request on the gateway's own endpoints (FastAPI's `Request`)."""
    check_length(request.headers.get("content-length"), max_bytes)
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise PayloadTooLarge(f"request body exceeds the limit of {max_bytes} bytes")
        parts.append(chunk)
    return b"".join(parts)


async def _respond(
    gateway: Gateway, headers: RequestHeaders, exchange: Exchange, dialect: Dialect, raw: bytes
) -> Response:
    endpoint = exchange.endpoint
    named: str | None = None  # the route, once the request names one that exists
    try:
        bounds = gateway.config.bounds
        check_depth(raw, bounds.max_json_depth)
        translation = dialect.read(raw, bounds, headers)
        body, head = parse_body(
            translation.body, endpoint, None if translation.translated else bounds
        )
        if gateway.cascades:  # imported only where a cascade is configured
            from gateway.http.cascade_leg import cascade_for, run_cascade

            cascade = cascade_for(gateway, head.model, endpoint)
            if cascade is not None:
                return await run_cascade(
                    gateway, cascade, headers, exchange, dialect, translation, body, head
                )
        route = gateway.router.route(head.model)
        named = route.name
        traits = keyed_traits(exchange.caller, route.name, traits_of(endpoint, body, head, headers))
        admission = gateway.admission
        standing = admission.standing(exchange.caller, headers) if admission is not None else None
        route, budget = await budgeted_route(
            gateway.tenancy.budgets, gateway.router, exchange.caller, route
        )
        named = route.name
        plan = gateway.router.plan(route, traits)
        limits = await admit(
            gateway.tenancy.limiter,
            exchange.caller,
            route.name,
            plan.first.work.prompt_tokens,
            traits.max_tokens,
        )
    except SwitchyardError as exc:
        gateway.telemetry.refused(exc, exchange.ingress, exchange.started, exchange.caller, named)
        if exchange.trace is not None:  # refused before a decision: no exchange to end it
            exchange.trace.finish(exc.status, exc.code or exc.type, None, None)
        return dialect.error_response(exc, rejection_headers(exc))
    decision = plan.first.decision
    record = DecisionRecord(decision, plan.first.work, placement=plan.first.placement)
    exchange.record = record
    gateway.ring.add(record)
    if exchange.trace is not None:
        exchange.trace.decided(record)
    exchange.route, exchange.stream = route.name, traits.stream
    if gateway.config.store.store_prompts:
        exchange.body = body
    exchange.quality = quality_context(gateway, record, route, body, traits)
    path = _UPSTREAM_PATHS[endpoint]
    upstream = UpstreamBodies(
        path,
        translation.body,
        body,
        head.model,
        traits.stream,
        translation.plain_body,
        translation.native,
    )
    answer_headers = {"x-switchyard-decision": decision.id, **budget, **limits}
    try:
        first_token_by = None
        if admission is not None and standing is not None:
            first_token_by = await hold(admission, exchange, route, plan, standing, answer_headers)
        if traits.stream:
            return await _open_stream(
                gateway, exchange, translation, plan, upstream, answer_headers, first_token_by
            )
        return await _send(gateway, exchange, translation, plan, upstream, answer_headers)
    except SwitchyardError as exc:
        if isinstance(exc, ClientError):  # the gateway's own refusal: flow control's 429s
            refusals = gateway.telemetry.refusals
            line = refusals.line(exc.status, exc.code or exc.type)
            exchange.failed(exc.status, exc.code, reason=refusals.reason(exc.message), logged=line)
        else:
            exchange.failed(exc.status, exc.code)
        return dialect.error_response(exc, answer_headers)
    except asyncio.CancelledError:
        if not exchange.finished:
            exchange.failed(499, "client_disconnected")
        raise
    except Exception:  # a bug: answered 500 by `serve_proxy`, the lease ended here
        if not exchange.finished:
            exchange.failed(500, "internal_error")
        raise


async def hold(
    admission: Admission,
    exchange: Exchange,
    route: RouteConfig,
    plan: RoutePlan,
    standing: Standing,
    headers: dict[str, str],
) -> float | None:
    """Flow control: return when the request may go (on `plan`'s first leg, perhaps
    decided again or a fallback route's), with the moment its first token must come by
    when it is to be cut there; RequestShed when it may not go."""
    record = exchange.record
    assert record is not None
    try:
        first_token_by = await admission.admit(route, plan, standing, record)
    finally:
        held = record.held
        if held is not None:
            headers["x-switchyard-admission"] = held.outcome
            headers["x-switchyard-queue-ms"] = f"{held.waited_ms:.1f}"
    if record.held is not None:
        tenant = standing.tenant
        exchange.charge = partial(admission.charge_answer, tenant)
    return first_token_by


async def _send(
    gateway: Gateway,
    exchange: Exchange,
    translation: Translation,
    plan: RoutePlan,
    upstream: UpstreamBodies,
    headers: dict[str, str],
) -> Response:
    record = exchange.record
    assert record is not None
    deadline = gateway.dispatcher.deadline()
    lease, response = await gateway.dispatcher.send(
        record, plan, upstream.request_for, deadline, trace=exchange.trace
    )
    exchange.lease = lease
    response = renamed_response(response, exchange.route, served_model(record))
    return deliver_answer(exchange, translation, response, headers)


async def _open_stream(
    gateway: Gateway,
    exchange: Exchange,
    translation: Translation,
    plan: RoutePlan,
    upstream: UpstreamBodies,
    headers: dict[str, str],
    first_token_by: float | None = None,
) -> Response:
    record = exchange.record
    assert record is not None
    deadline = gateway.dispatcher.deadline()
    lease, stream = await gateway.dispatcher.open_stream(
        record,
        plan,
        upstream.request_for,
        deadline,
        first_token_by=first_token_by,
        trace=exchange.trace,
    )
    exchange.lease = lease
    return relay_answer(gateway, exchange, translation, stream, headers, deadline)

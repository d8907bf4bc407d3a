"""A backend's answer on its way to the client: a whole answer shaped by the client's
dialect, a committed stream relayed (spliced where it can be), and what the quality
signals need of the request. The proxy path and a cascade's tiers both end here."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from gateway.http.dialect import NativeRelay
from gateway.http.model_rename import served_model, stream_renamer
from gateway.http.relay.response import RelayResponse
from gateway.http.relay.splice import Splice
from gateway.http.relay.streaming import RelayState, StreamOutcome, relay
from gateway.quality.signals.collect import StreamCollector, collect_body
from gateway.quality.signals.passive import RequestContext, request_context
from providers.base import pipeable
from providers.native import native_events
from providers.usage import usage_from_body

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.responses import Response

    from gateway.config.root import RouteConfig
    from gateway.http.dialect import Translation
    from gateway.http.exchange import Collect, Exchange
    from gateway.http.proxy import Gateway
    from gateway.routing.decisions import DecisionRecord
    from gateway.routing.router import RequestTraits
    from providers.base import UpstreamResponse, UpstreamStream


def deliver_answer(
    exchange: Exchange,
    translation: Translation,
    response: UpstreamResponse,
    headers: dict[str, str],
    collect: Collect | None = None,
) -> Response:
    """A whole answer from `exchange.lease`'s backend, shaped for the client; the exchange
    ends with it (`collect`: the answer as the quality signals read it, when already)."""
    record, lease = exchange.record, exchange.lease
    assert record is not None and lease is not None
    headers["x-switchyard-backend"] = lease.backend
    # Shaped first: an answer the dialect cannot read fails the exchange instead.
    reply = translation.respond(response, headers, record.work.prompt_tokens)
    usage = usage_from_body(response.body, response.document)
    if exchange.trace is not None:
        exchange.trace.read_answer(response.body)
    if collect is None:
        collect = partial(collect_body, response.body, document=response.document)
    exchange.answered(response.status, usage, collect)
    return reply


def relay_answer(
    gateway: Gateway,
    exchange: Exchange,
    translation: Translation,
    stream: UpstreamStream,
    headers: dict[str, str],
    deadline: float,
    *,
    public: str | None = None,
    tapped: bool = False,
) -> Response:
    """A committed stream from `exchange.lease`'s backend, relayed to the client; the
    exchange ends when it closes. `public`: the model name its chunks carry (the route's
    by default); `tapped`: its bytes are kept for a parse at the end even when the quality
    signals do not inspect it (a cascade judges it)."""
    record, lease = exchange.record, exchange.lease
    assert record is not None and lease is not None
    public = public or exchange.route
    served = served_model(record)
    events = native_events(stream)
    native = None if events is None else NativeRelay(events, None if served == public else public)
    stream = gateway.drain.watch(stream)  # a shutdown's deadline can end it, with an event
    headers["x-switchyard-backend"] = lease.backend
    headers["cache-control"] = "no-cache"
    keep = exchange.quality is not None or tapped
    outcome = StreamOutcome(StreamCollector() if keep else None)
    exchange.relayed = outcome
    if exchange.trace is not None:
        outcome.finish_tap = exchange.trace.stream_tap()
    rename = stream_renamer(stream.content_type, public, served)
    state = RelayState(deadline, outcome, stream.content_type, rename=rename)
    tokens = record.work.prompt_tokens

    def pulled() -> AsyncIterator[bytes]:
        return translation.relay(relay(stream, state), outcome, tokens, native)

    # A stream that can be piped is spliced: written to the client from the upstream
    # connection's callbacks (when the server lets the response do it).
    piped = pipeable(stream)

    def spliced() -> Splice:
        assert piped is not None
        return Splice(piped, state, translation.shape(outcome, tokens))

    return RelayResponse(
        pulled,
        media_type=translation.stream_media_type(stream.content_type),
        headers=headers,
        on_close=exchange.stream_closed,
        splice=None if piped is None else spliced,
    )


def quality_context(
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

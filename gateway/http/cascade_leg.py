"""The proxy path of a request to a cascade: tier after tier until an answer passes its
checks (or the last tier answers, marked when it fails them).

Each tier is a route, decided, admitted and dispatched as any request to it, with its own
decision, lease and record (`CascadeNote` on it says which tier, which checks failed,
why the request started where it did). A whole answer is judged before it is shaped for
the client; a stream is held (`gateway.http.relay.held`) until its answer ends or a
bound passes, judged, then relayed from its first held byte — or, in `commit` mode,
held only to its first content token. A tier that fails before answering escalates
like one whose answer failed. The client sees one answer in its own API format, with
`x-switchyard-cascade-*` headers saying which tier answered and what was escalated.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from gateway.cascade.answer import Answer, CheckRequest, answer_of, check_request
from gateway.cascade.logprobs import body_logprobs, stream_logprobs
from gateway.cascade.note import CascadeNote, CascadeOutcome
from gateway.cascade.start import request_kind
from gateway.cascade.verdict import Failure, Verdict
from gateway.errors import InvalidRequest, SwitchyardError
from gateway.http.admission import admit, budgeted_route, keyed_traits, rejection_headers
from gateway.http.exchange import Exchange, kept
from gateway.http.model_rename import renamed_response, served_model
from gateway.http.proxy import deliver_answer, hold, quality_context, relay_answer
from gateway.http.relay.held import HeldStream
from gateway.http.wire import UpstreamBodies, traits_of
from gateway.quality.signals.collect import CollectedResponse, StreamCollector, collect_body
from gateway.routing.decisions import DecisionRecord
from providers.usage import Usage, usage_from_body

if TYPE_CHECKING:
    from starlette.responses import Response

    from gateway.admission.classes import Standing
    from gateway.cascade.cascades import Cascade
    from gateway.config.root import RouteConfig
    from gateway.http.dialect import Dialect, Translation
    from gateway.http.proxy import Gateway
    from gateway.http.wire import RequestHeaders
    from gateway.routing.router import RoutePlan

TIER_HEADER = "x-switchyard-cascade-tier"
CHECKS_HEADER = "x-switchyard-cascade-checks"
ESCALATED_HEADER = "x-switchyard-cascade-escalated"
_PATH = "/chat/completions"


class _Escalate(Exception):
    """A tier's attempt ended without an answer for the client: go on to the next tier."""

    def __init__(self, failures: tuple[Failure, ...]) -> None:
        super().__init__(", ".join(f.check for f in failures))
        self.failures = failures


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A tier's attempt, decided and recorded, ready to dispatch."""

    route: RouteConfig
    plan: RoutePlan
    upstream: UpstreamBodies
    headers: dict[str, str]
    note: CascadeNote


class CascadeRun:
    """One request's way through a cascade's tiers."""

    def __init__(
        self,
        gateway: Gateway,
        cascade: Cascade,
        headers: RequestHeaders,
        exchange: Exchange,
        translation: Translation,
        body: dict[str, Any],
        head: Any,
    ) -> None:
        self.gateway, self.cascade, self.headers = gateway, cascade, headers
        self.first = exchange
        self.translation, self.body, self.head = translation, body, head
        self.request: CheckRequest = check_request(body)
        self.kind = request_kind(len(translation.body) // 4, body, exchange.key_id)
        self.stream = bool(head.stream)
        self.escalated: list[str] = []
        self.attempts = 0
        self.request_id = ""
        self.limits: dict[str, str] | None = None
        self.top = self._top()
        self.current = exchange
        """The exchange of the attempt under way."""

    def _top(self) -> tuple[str, str] | None:
        route = self.gateway.router.routes.get(self.cascade.tiers[-1])
        if route is None or not route.members:
            return None
        member = route.members[0]
        return member.backend, member.model

    async def respond(self, dialect: Dialect, standing: Standing | None) -> Response:
        exchange = self.first
        try:
            return await self._tiers(dialect, standing)
        except asyncio.CancelledError:
            exchange = self.current
            if not exchange.finished and exchange.record is not None:
                exchange.failed(499, "client_disconnected")
            raise
        except Exception:  # a bug: answered 500 by `serve_proxy`
            exchange = self.current
            if not exchange.finished and exchange.record is not None:
                exchange.failed(500, "internal_error")
            raise

    async def _tiers(self, dialect: Dialect, standing: Standing | None) -> Response:
        cascade = self.cascade
        start = cascade.start(self.kind)
        tiers = cascade.tiers
        for tier in range(start.tier, len(tiers)):
            if self.attempts:
                self.current = self._next_exchange()
            exchange = self.current
            self.attempts += 1
            note = CascadeNote(
                cascade=cascade.name,
                request_id=self.request_id,
                tier=tier,
                tier_route=tiers[tier],
                attempt=self.attempts,
                outcome="passed",
                start_tier=start.tier,
                start_reason=start.reason,
                kind=self.kind,
                top=self.top,
                top_tier=tier == len(tiers) - 1,
            )
            try:
                prepared = await self._prepare(exchange, note)
            except SwitchyardError as exc:  # the request's own fault: a refusal
                return self.refuse(exchange, dialect, exc)
            try:
                return await self._dispatch(exchange, standing, prepared)
            except _Escalate as escalation:
                cascade.learn(self.kind, tier, failed=True)
                self.escalated.append(f"{tiers[tier]}={_names(escalation.failures)}")
            except SwitchyardError as exc:  # the tier failed before an answer
                failure = Failure("error", exc.code or exc.type)
                exchange.cascade = replace(prepared.note, outcome="escalated", failures=(failure,))
                if not exchange.finished:
                    exchange.failed(exc.status, exc.code)
                if note.top_tier:
                    return dialect.error_response(exc, self._headers(prepared.headers, note))
                self.escalated.append(f"{tiers[tier]}=error")
        raise AssertionError("the last tier returns or raises")  # pragma: no cover

    def _next_exchange(self) -> Exchange:
        first = self.first
        exchange = Exchange(
            first.pipe,
            first.recorder,
            time.monotonic(),
            first.key_id,
            first.endpoint,
            first.ingress,
        )
        exchange.caller, exchange.body = first.caller, first.body
        return exchange

    def refuse(self, exchange: Exchange, dialect: Dialect, exc: SwitchyardError) -> Response:
        """Refused before its dispatch (a key that may not use a tier, a limit, a budget)."""
        if exchange.record is None:
            self.gateway.telemetry.refused(
                exc, exchange.ingress, exchange.started, exchange.caller, self.cascade.name
            )
        elif not exchange.finished:
            exchange.failed(exc.status, exc.code)
        return dialect.error_response(exc, rejection_headers(exc))

    async def _prepare(self, exchange: Exchange, note: CascadeNote) -> _Prepared:
        """The tier's route decided for the request, its record started."""
        gateway = self.gateway
        route = gateway.router.route(note.tier_route)
        route, budget = await budgeted_route(
            gateway.tenancy.budgets, gateway.router, exchange.caller, route
        )
        body = self._tier_body(note.top_tier)
        traits = keyed_traits(
            exchange.caller,
            route.name,
            traits_of("chat.completions", body, self.head, self.headers),
        )
        plan = gateway.router.plan(route, traits)
        if self.limits is None:  # charged once per client request
            self.limits = await admit(
                gateway.tenancy.limiter,
                exchange.caller,
                route.name,
                plan.first.work.prompt_tokens,
                traits.max_tokens,
            )
        record = DecisionRecord(
            plan.first.decision, plan.first.work, placement=plan.first.placement
        )
        exchange.record = record
        gateway.ring.add(record)
        self.request_id = self.request_id or record.decision.id
        note = replace(note, request_id=self.request_id)
        exchange.cascade = note
        exchange.route, exchange.stream = route.name, self.stream
        exchange.quality = quality_context(gateway, record, route, body, traits)
        raw = self.translation.body if body is self.body else orjson.dumps(body)
        plain = self.translation.plain_body if body is self.body else None
        upstream = UpstreamBodies(_PATH, raw, body, self.head.model, self.stream, plain)
        headers = {"x-switchyard-decision": record.decision.id, **budget, **self.limits}
        return _Prepared(route, plan, upstream, headers, note)

    async def _dispatch(
        self, exchange: Exchange, standing: Standing | None, prepared: _Prepared
    ) -> Response:
        first_token_by = None
        admission = self.gateway.admission
        if admission is not None and standing is not None:
            first_token_by = await hold(
                admission, exchange, prepared.route, prepared.plan, standing, prepared.headers
            )
        if self.stream:
            return await self._streamed(exchange, prepared, first_token_by)
        return await self._whole(exchange, prepared)

    def _tier_body(self, last: bool) -> dict[str, Any]:
        """The request as a tier gets it: with log-probabilities asked for where a check
        reads them (not of the last tier, whose answer is final either way)."""
        if last or not self.cascade.checks.asks_logprobs or self.body.get("logprobs"):
            return self.body
        return {**self.body, "logprobs": True}

    async def _whole(self, exchange: Exchange, prepared: _Prepared) -> Response:
        gateway, plan, upstream = self.gateway, prepared.plan, prepared.upstream
        headers, note = prepared.headers, prepared.note
        record = exchange.record
        assert record is not None
        deadline = gateway.dispatcher.deadline()
        lease, response = await gateway.dispatcher.send(
            record, plan, upstream.request_for, deadline
        )
        exchange.lease = lease
        response = renamed_response(response, self.cascade.name, served_model(record))
        collected = collect_body(response.body, document=response.document)
        logprobs = body_logprobs(_mapping(response.document) or _parsed(response.body))
        answer = answer_of(collected, logprobs)
        verdict = self.cascade.checks.judge(self.request, answer)
        collect = partial(kept, collected)
        if not verdict.passed and not note.top_tier:
            exchange.cascade = self._judged(note, verdict, answer, "escalated")
            usage = usage_from_body(response.body, response.document)
            exchange.escalated(response.status, usage, collect, complete=True)
            raise _Escalate(verdict.failures)
        outcome: CascadeOutcome = "passed" if verdict.passed else "failed"
        exchange.cascade = self._judged(note, verdict, answer, outcome)
        self.cascade.learn(self.kind, note.tier, failed=not verdict.passed)
        return deliver_answer(
            exchange, self.translation, response, self._headers(headers, note, verdict), collect
        )

    async def _streamed(
        self, exchange: Exchange, prepared: _Prepared, first_token_by: float | None
    ) -> Response:
        gateway, plan, upstream = self.gateway, prepared.plan, prepared.upstream
        headers, note = prepared.headers, prepared.note
        record = exchange.record
        assert record is not None
        deadline = gateway.dispatcher.deadline()
        lease, opened = await gateway.dispatcher.open_stream(
            record, plan, upstream.request_for, deadline, first_token_by=first_token_by
        )
        exchange.lease = lease
        stream = HeldStream(opened)
        streaming = self.cascade.config.streaming
        max_tokens = streaming.hold_tokens if streaming.mode == "hold" else 1
        left_s = max(0.0, deadline - time.monotonic())
        try:
            held = await stream.hold(max_tokens, min(streaming.hold_s, left_s))
        except BaseException:  # cancelled (the client left): the pump and upstream end
            await stream.aclose()
            raise
        collector = StreamCollector()
        collector.feed(held.data)
        collected = collector.finish()
        answer = answer_of(collected, stream_logprobs(held.data), complete=held.ended)
        if held.error is not None:
            await stream.aclose()
            failure = Failure("error", getattr(held.error, "code", None) or "upstream_error")
            self._end_held(exchange, note, held.tokens, answer, (failure,), complete=False)
            raise _Escalate((failure,))
        if held.ended or streaming.mode == "hold":
            verdict = self.cascade.checks.judge(self.request, answer)
        else:
            verdict = _empty_start(answer)
        if not verdict.passed and not note.top_tier:
            await stream.aclose()
            self._end_held(exchange, note, held.tokens, answer, verdict.failures, held.ended)
            raise _Escalate(verdict.failures)
        if held.ended or not verdict.passed:
            outcome: CascadeOutcome = "passed" if verdict.passed else "failed"
            exchange.cascade = self._judged(note, verdict, answer, outcome)
            self.cascade.learn(self.kind, note.tier, failed=not verdict.passed)
        else:  # committed before the whole was judged: judged when the stream ends
            exchange.cascade = self._judged(note, verdict, answer, "committed")
            exchange.judge_after = partial(self._judge_whole, exchange.cascade)
        return relay_answer(
            gateway,
            exchange,
            self.translation,
            stream,
            self._headers(headers, note, verdict, committed=not held.ended),
            deadline,
            public=self.cascade.name,
            tapped=True,
        )

    def _end_held(
        self,
        exchange: Exchange,
        note: CascadeNote,
        tokens: int,
        answer: Answer,
        failures: tuple[Failure, ...],
        complete: bool,
    ) -> None:
        """A held stream the client will not see: its attempt ends with what it cost."""
        verdict = Verdict(failures, len(failures))
        exchange.cascade = self._judged(note, verdict, answer, "escalated")
        record = exchange.record
        assert record is not None
        usage = Usage(
            prompt_tokens=record.work.prompt_tokens,
            completion_tokens=answer.completion_tokens or tokens,
            cached_tokens=None,
        )
        collected = CollectedResponse(
            content=answer.text,
            tool_calls=answer.tool_calls,
            finish_reason=answer.finish_reason,
            completion_tokens=answer.completion_tokens,
            done=complete,
        )
        exchange.escalated(200, usage, partial(kept, collected), complete=complete)

    def _judge_whole(self, note: CascadeNote, collected: CollectedResponse) -> CascadeNote:
        """A committed stream's whole answer, judged for the record and the book."""
        answer = answer_of(collected)
        verdict = self.cascade.checks.judge(self.request, answer)
        self.cascade.learn(self.kind, note.tier, failed=not verdict.passed)
        return replace(note, failures=verdict.failures)

    def _judged(
        self, note: CascadeNote, verdict: Verdict, answer: Answer, outcome: CascadeOutcome
    ) -> CascadeNote:
        values = answer.logprobs
        mean = math.fsum(values) / len(values) if values else None
        return replace(note, outcome=outcome, failures=verdict.failures, mean_logprob=mean)

    def _headers(
        self,
        headers: dict[str, str],
        note: CascadeNote | None = None,
        verdict: Verdict | None = None,
        *,
        committed: bool = False,
    ) -> dict[str, str]:
        if note is not None:
            headers[TIER_HEADER] = note.tier_route
        if verdict is not None:
            if not verdict.passed:
                headers[CHECKS_HEADER] = f"failed: {verdict.names}"
            else:
                headers[CHECKS_HEADER] = "committed" if committed else "passed"
        if self.escalated:
            headers[ESCALATED_HEADER] = "; ".join(self.escalated)
        return headers


def _empty_start(answer: Answer) -> Verdict:
    """Commit mode: a start with content passes; one that ended empty does not."""
    if answer.complete and not answer.text.strip() and not answer.tool_calls:
        return Verdict((Failure("empty", "empty answer"),), 1)
    return Verdict((), 1)


def _names(failures: tuple[Failure, ...]) -> str:
    return ",".join(f.check for f in failures)


def _mapping(document: object) -> dict[str, Any] | None:
    return document if isinstance(document, dict) else None


def _parsed(body: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def cascade_for(gateway: Gateway, model: str, endpoint: str) -> Cascade | None:
    """The cascade a request's model names, if any; InvalidRequest for an endpoint a
    cascade does not serve."""
    cascades = gateway.cascades
    cascade = cascades.get(model) if cascades is not None else None
    if cascade is not None and endpoint != "chat.completions":
        raise InvalidRequest(
            f"the model '{model}' is a cascade: it answers chat requests only", param="model"
        )
    return cascade


async def run_cascade(
    gateway: Gateway,
    cascade: Cascade,
    headers: RequestHeaders,
    exchange: Exchange,
    dialect: Dialect,
    translation: Translation,
    body: dict[str, Any],
    head: Any,
) -> Response:
    """Answer a request to `cascade` (the proxy path calls it once the body is read)."""
    run = CascadeRun(gateway, cascade, headers, exchange, translation, body, head)
    admission = gateway.admission
    try:
        standing = admission.standing(exchange.caller, headers) if admission is not None else None
    except SwitchyardError as exc:
        return run.refuse(exchange, dialect, exc)
    return await run.respond(dialect, standing)

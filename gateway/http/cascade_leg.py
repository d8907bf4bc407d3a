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
Traced, each attempt (a tier's, the judge's) is a leg of the request's trace: its decision
and a client span per upstream attempt, tagged with its tier and outcome, under the one
server span that ends with the client's answer.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from gateway.cascade.answer import Answer, CheckRequest, check_request
from gateway.cascade.judge import judge_body, judge_failure, p_yes
from gateway.cascade.note import CascadeNote, CascadeOutcome
from gateway.cascade.start import request_kind
from gateway.cascade.verdict import Failure
from gateway.errors import Forbidden, InvalidRequest, SwitchyardError
from gateway.http.admission import admit, budgeted_route, keyed_traits, rejection_headers
from gateway.http.cascade_answers import Escalate, Prepared, TierAnswers, parsed_json
from gateway.http.exchange import Exchange
from gateway.http.proxy import hold
from gateway.http.replies import quality_context
from gateway.http.wire import UpstreamBodies, parse_body, traits_of
from gateway.quality.signals.collect import collect_body
from gateway.routing.decisions import DecisionRecord
from providers.usage import usage_from_body

if TYPE_CHECKING:
    from starlette.responses import Response

    from gateway.admission.classes import Standing
    from gateway.cascade.cascades import Cascade
    from gateway.http.dialect import Dialect, Translation
    from gateway.http.proxy import Gateway
    from gateway.http.wire import RequestHeaders
    from gateway.tracing.spans import RequestTrace, TraceLeg

_PATH = "/chat/completions"


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
        self.attempts = 0
        self.request_id = ""
        self.limits: dict[str, str] | None = None
        self.top = self._top()
        self.current = exchange
        """The exchange of the attempt under way."""
        self.trace: RequestTrace | None = exchange.trace.request if exchange.trace else None
        self.answers = TierAnswers(
            gateway, cascade, translation, self.request, self.kind, self._ask_judge
        )

    def _top(self) -> tuple[str, str] | None:
        route = self.gateway.router.routes.get(self.cascade.tiers[-1])
        if route is None or not route.members:
            return None
        member = route.members[0]
        return member.backend, member.model

    async def respond(self, dialect: Dialect, standing: Standing | None) -> Response:
        try:
            return await self._tiers(dialect, standing)
        except asyncio.CancelledError:
            self._abandoned(499, "client_disconnected")
            raise
        except Exception:  # a bug: answered 500 by `serve_proxy`
            self._abandoned(500, "internal_error")
            raise

    def _leg(self, tier: int, judge: bool = False) -> TraceLeg | None:
        """An attempt's part of the request's trace, tagged with its tier."""
        if self.trace is None:
            return None
        tags: dict[str, str | int] = {
            "switchyard.cascade.name": self.cascade.name,
            "switchyard.cascade.tier": tier,
            "switchyard.cascade.tier_route": self.cascade.tiers[tier],
        }
        return self.trace.leg(tags | {"switchyard.cascade.judge": True} if judge else tags)

    def _abandoned(self, status: int, code: str) -> None:
        """The attempt under way ends without an answer for the client: not a pass."""
        exchange = self.current
        if exchange.finished or exchange.record is None:
            if self.trace is not None:  # between attempts: the request's span ends here
                self.trace.finish(status, code)
            return
        if exchange.cascade is not None and exchange.cascade.outcome != "judge":
            exchange.cascade = replace(exchange.cascade, outcome="abandoned")
        exchange.failed(status, code)
        if self.trace is not None:  # a judge's leg does not end it
            self.trace.finish(status, code)

    async def _tiers(self, dialect: Dialect, standing: Standing | None) -> Response:
        cascade = self.cascade
        start = cascade.start(self.kind)
        tiers = cascade.tiers
        for tier in range(start.tier, len(tiers)):
            if self.attempts:
                self.current = self._next_exchange()
            exchange = self.current
            exchange.trace = self._leg(tier)
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
            except SwitchyardError as exc:  # the request's own fault, or a tier's budget
                if self.attempts == 1 or note.top_tier:
                    return self.refuse(exchange, dialect, exc)
                self.answers.escalated.append(f"{tiers[tier]}=refused")  # e.g. its budget
                self._refused_tier(exchange, note, exc)
                continue
            try:
                return await self._dispatch(exchange, standing, prepared)
            except Escalate as escalation:
                cascade.learn(self.kind, tier, failed=True)
                failed = ",".join(f.check for f in escalation.failures)
                self.answers.escalated.append(f"{tiers[tier]}={failed}")
            except SwitchyardError as exc:  # the tier failed before an answer
                failure = Failure("error", exc.code or exc.type)
                outcome: CascadeOutcome = "failed" if note.top_tier else "escalated"
                exchange.cascade = replace(prepared.note, outcome=outcome, failures=(failure,))
                if not exchange.finished:
                    exchange.failed(exc.status, exc.code)
                if note.top_tier:
                    return dialect.error_response(exc, self.answers.headers(prepared.headers, note))
                self.answers.escalated.append(f"{tiers[tier]}=error")
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

    def _refused_tier(self, exchange: Exchange, note: CascadeNote, exc: SwitchyardError) -> None:
        """A tier after the first refused the request (its route's budget, a limit): the
        refusal is counted and the request goes on."""
        if exchange.record is not None:
            exchange.cascade = replace(note, outcome="escalated")
        self._end_refused(exchange, exc, note.tier_route)

    def refuse(self, exchange: Exchange, dialect: Dialect, exc: SwitchyardError) -> Response:
        """Refused before its dispatch (a key that may not use a tier, a limit, a budget)."""
        self._end_refused(exchange, exc, self.cascade.name)
        if self.trace is not None:  # refused before its decision: no exchange ended it
            self.trace.finish(exc.status, exc.code or exc.type)
        return dialect.error_response(exc, rejection_headers(exc))

    def _end_refused(self, exchange: Exchange, exc: SwitchyardError, route: str) -> None:
        """A refusal before a decision is the gateway's refusal; after one, the attempt's."""
        if exchange.record is None:
            self.gateway.telemetry.refused(
                exc, exchange.ingress, exchange.started, exchange.caller, route
            )
        elif not exchange.finished:
            exchange.failed(exc.status, exc.code)

    async def _ask_judge(self, answer: Answer, judged: CascadeNote) -> Failure | None:
        """The judge route's verdict on a tier's answer that passed its checks; None when
        it says yes, or says nothing usable (no evidence: the answer passes). Its call is
        an attempt of its own, recorded (`judge`) with what it cost."""
        judge = self.cascade.config.judge
        if judge is None:
            return None
        gateway = self.gateway
        exchange = self._next_exchange()
        route = gateway.router.route(judge.route)
        raw = orjson.dumps(judge_body(judge, route.name, self.request, answer))
        body, head = parse_body(raw, "chat.completions", None)
        # The judge reads the user's words: it goes only where the request may go (the
        # key's and the request's placement tags).
        traits = traits_of("chat.completions", body, head, self.headers)
        caller = exchange.caller
        if caller is not None and caller.tags:
            required = traits.required_tags.require(caller.tag_source, caller.tags)
            traits = replace(traits, required_tags=required)
        plan = gateway.router.plan(route, traits)
        leg = plan.first
        record = DecisionRecord(leg.decision, leg.work, placement=leg.placement)
        exchange.record, exchange.route = record, route.name
        gateway.ring.add(record)
        exchange.trace = self._leg(judged.tier, judge=True)
        if exchange.trace is not None:
            exchange.trace.decided(record)
        exchange.cascade = replace(judged, tier_route=route.name, outcome="judge", failures=())
        upstream = UpstreamBodies(_PATH, raw, body, head.model, False)
        dispatcher = gateway.dispatcher
        try:
            async with asyncio.timeout(judge.timeout_s):
                lease, response = await dispatcher.send(
                    record, plan, upstream.request_for, self.answers.deadline, trace=exchange.trace
                )
        except SwitchyardError as exc:
            exchange.failed(exc.status, exc.code)
            return None
        except TimeoutError:
            exchange.failed(504, "judge_timeout")
            return None
        except asyncio.CancelledError:
            exchange.failed(499, "client_disconnected")
            raise
        exchange.lease = lease
        document = response.document if isinstance(response.document, dict) else None
        usage = usage_from_body(response.body, response.document)
        if exchange.trace is not None:
            exchange.trace.read_answer(response.body)
        exchange.answered(
            response.status, usage, partial(collect_body, response.body, document=response.document)
        )
        return judge_failure(judge, p_yes(document or parsed_json(response.body)))

    async def _prepare(self, exchange: Exchange, note: CascadeNote) -> Prepared:
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
        if exchange.trace is not None:
            exchange.trace.decided(record)
        self.request_id = self.request_id or record.decision.id
        note = replace(note, request_id=self.request_id)
        exchange.cascade = note
        exchange.route, exchange.stream = route.name, self.stream
        exchange.quality = quality_context(gateway, record, route, body, traits)
        raw = self.translation.body if body is self.body else orjson.dumps(body)
        plain = self.translation.plain_body if body is self.body else None
        upstream = UpstreamBodies(_PATH, raw, body, self.head.model, self.stream, plain)
        headers = {"x-switchyard-decision": record.decision.id, **budget, **self.limits}
        return Prepared(route, plan, upstream, headers, note, asked_logprobs=body is not self.body)

    async def _dispatch(
        self, exchange: Exchange, standing: Standing | None, prepared: Prepared
    ) -> Response:
        first_token_by = None
        admission = self.gateway.admission
        if admission is not None and standing is not None:
            first_token_by = await hold(
                admission, exchange, prepared.route, prepared.plan, standing, prepared.headers
            )
        if self.stream:
            return await self.answers.streamed(exchange, prepared, first_token_by)
        return await self.answers.whole(exchange, prepared)

    def _tier_body(self, last: bool) -> dict[str, Any]:
        """The request as a tier gets it: with log-probabilities asked for where a check
        reads them (not of the last tier, whose answer is final either way)."""
        if last or not self.cascade.checks.asks_logprobs or self.body.get("logprobs"):
            return self.body
        return {**self.body, "logprobs": True}


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
    if gateway.config.store.store_prompts:
        exchange.body = body
    run = CascadeRun(gateway, cascade, headers, exchange, translation, body, head)
    caller = exchange.caller
    barred = [t for t in cascade.tiers if caller is not None and not caller.may_use(t)]
    if barred:  # refused before any tier is tried, not after the first one
        message = f"this key may not use the model '{cascade.name}' (its tier '{barred[0]}')"
        return run.refuse(exchange, dialect, Forbidden(message, param="model"))
    native = translation.native
    if native is not None and native.required is not None:  # its tiers get translations
        refused = InvalidRequest(f"{native.required}; a cascade's tiers are sent translations")
        return run.refuse(exchange, dialect, refused)
    admission = gateway.admission
    try:
        standing = admission.standing(exchange.caller, headers) if admission is not None else None
    except SwitchyardError as exc:
        return run.refuse(exchange, dialect, exc)
    return await run.respond(dialect, standing)

"""A cascade tier's answer, judged before the client sees it: a whole answer before it
is shaped for the client, a stream once held (`gateway.http.relay.held`) to its end or a
bound, or, in `commit` mode, to its first content token; the judge route asked last.
A failing answer ends its attempt (its record says why) and raises `Escalate`; a passing
one, or the last tier's, goes to the client with the `x-switchyard-cascade-*` headers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from gateway.cascade.answer import Answer, CheckRequest, answer_of
from gateway.cascade.logprobs import body_logprobs, stream_logprobs
from gateway.cascade.note import CascadeNote, CascadeOutcome
from gateway.cascade.verdict import Failure, Verdict
from gateway.http.exchange import Exchange, kept
from gateway.http.model_rename import renamed_response, served_model
from gateway.http.relay.held import Held, HeldStream
from gateway.http.replies import deliver_answer, relay_answer
from gateway.quality.signals.collect import CollectedResponse, StreamCollector, collect_body
from providers.errors import ApiError
from providers.usage import Usage, UsageTap, usage_from_body

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from starlette.responses import Response

    from gateway.cascade.cascades import Cascade
    from gateway.config.root import RouteConfig
    from gateway.http.dialect import Translation
    from gateway.http.proxy import Gateway
    from gateway.http.wire import UpstreamBodies
    from gateway.routing.router import RoutePlan
    from providers.base import UpstreamResponse

TIER_HEADER = "x-switchyard-cascade-tier"
CHECKS_HEADER = "x-switchyard-cascade-checks"
ESCALATED_HEADER = "x-switchyard-cascade-escalated"


class Escalate(Exception):
    """A tier's attempt ended without an answer for the client: go on to the next tier."""

    def __init__(self, failures: tuple[Failure, ...]) -> None:
        super().__init__(", ".join(f.check for f in failures))
        self.failures = failures


@dataclass(frozen=True, slots=True)
class Prepared:
    """A tier's attempt, decided and recorded, ready to dispatch."""

    route: RouteConfig
    plan: RoutePlan
    upstream: UpstreamBodies
    headers: dict[str, str]
    note: CascadeNote
    asked_logprobs: bool = False
    """The gateway asked the tier for log-probabilities the client did not."""


class TierAnswers:
    """What a request's attempts share while their answers are judged."""

    def __init__(
        self,
        gateway: Gateway,
        cascade: Cascade,
        translation: Translation,
        request: CheckRequest,
        kind: str,
        ask_judge: Callable[[Answer, CascadeNote], Awaitable[Failure | None]],
    ) -> None:
        self.gateway, self.cascade, self.translation = gateway, cascade, translation
        self.request, self.kind, self.ask_judge = request, kind, ask_judge
        self.escalated: list[str] = []
        """`tier=checks` of each tier the request left, for the client's header."""
        self.deadline = gateway.dispatcher.deadline()
        """The request's one deadline, for every tier and the judge."""

    async def whole(self, exchange: Exchange, prepared: Prepared) -> Response:
        gateway, plan, upstream = self.gateway, prepared.plan, prepared.upstream
        headers, note = prepared.headers, prepared.note
        record = exchange.record
        assert record is not None
        lease, response = await gateway.dispatcher.send(
            record, plan, upstream.request_for, self.deadline, trace=exchange.trace
        )
        exchange.lease = lease
        response = renamed_response(response, self.cascade.name, served_model(record))
        collected = collect_body(response.body, document=response.document)
        logprobs = body_logprobs(_mapping(response.document) or parsed_json(response.body))
        answer = answer_of(collected, logprobs)
        usage = usage_from_body(response.body, response.document)
        lease.finish(usage)  # answered: its slot is free while the judge is asked
        verdict = await self._judge(answer, note)
        collect = partial(kept, collected)
        if not verdict.passed and not note.top_tier:
            exchange.cascade = self._judged(note, verdict, answer, "escalated")
            if exchange.trace is not None:
                exchange.trace.read_answer(response.body)
            exchange.escalated(response.status, usage, collect, complete=True)
            raise Escalate(verdict.failures)
        outcome: CascadeOutcome = "passed" if verdict.passed else "failed"
        exchange.cascade = self._judged(note, verdict, answer, outcome)
        self.cascade.learn(self.kind, note.tier, failed=not verdict.passed)
        if prepared.asked_logprobs:
            response = _without_logprobs(response)
        return deliver_answer(
            exchange, self.translation, response, self.headers(headers, note, verdict), collect
        )

    async def streamed(
        self, exchange: Exchange, prepared: Prepared, first_token_by: float | None
    ) -> Response:
        gateway, plan, upstream = self.gateway, prepared.plan, prepared.upstream
        record = exchange.record
        assert record is not None
        lease, opened = await gateway.dispatcher.open_stream(
            record,
            plan,
            upstream.request_for,
            self.deadline,
            first_token_by=first_token_by,
            trace=exchange.trace,
        )
        exchange.lease = lease
        stream = HeldStream(opened)
        # The backend's first chunk came now: its decode time counts from here, not from
        # when the held bytes reach the client.
        exchange.decode_from = time.monotonic()
        try:
            return await self._held(exchange, prepared, stream)
        except BaseException:  # escalated, cancelled or a bug: the pump and upstream end
            await stream.aclose()
            raise

    async def _held(self, exchange: Exchange, prepared: Prepared, stream: HeldStream) -> Response:
        headers, note = prepared.headers, prepared.note
        streaming = self.cascade.config.streaming
        max_tokens = streaming.hold_tokens if streaming.mode == "hold" else 1
        left_s = max(0.0, self.deadline - time.monotonic())
        held = await stream.hold(max_tokens, min(streaming.hold_s, left_s))
        collector = StreamCollector()
        collector.feed(held.data)
        collected = collector.finish()
        answer = answer_of(collected, stream_logprobs(held.data), complete=held.ended)
        if held.error is not None:
            code = getattr(held.error, "code", None) or "upstream_error"
            verdict = Verdict((Failure("error", code),), 1)
            if not note.top_tier:
                self._end_held(exchange, note, held, answer, verdict)
                raise Escalate(verdict.failures)
            # The last tier broke while held: what it sent, then the error event.
            exchange.cascade = self._judged(note, verdict, answer, "failed")
        elif held.ended or streaming.mode == "hold":
            verdict = await self._judge(answer, note)
        else:
            verdict = _empty_start(answer)
        if not verdict.passed and not note.top_tier:
            self._end_held(exchange, note, held, answer, verdict)
            raise Escalate(verdict.failures)
        if held.error is None and (held.ended or not verdict.passed):
            outcome: CascadeOutcome = "passed" if verdict.passed else "failed"
            exchange.cascade = self._judged(note, verdict, answer, outcome)
            self.cascade.learn(self.kind, note.tier, failed=not verdict.passed)
        elif held.error is None:  # committed before the whole was judged: judged at its end
            exchange.cascade = self._judged(note, verdict, answer, "committed")
            exchange.judge_after = partial(self._judge_whole, exchange.cascade)
        return relay_answer(
            self.gateway,
            exchange,
            self.translation,
            stream,
            self.headers(headers, note, verdict, committed=not held.ended),
            self.deadline,
            public=self.cascade.name,
            tapped=True,
        )

    async def _judge(self, answer: Answer, note: CascadeNote) -> Verdict:
        """An error in place of an answer fails it; else the checks' verdict, then, when
        they pass a whole answer of a tier that is not the last, the judge's."""
        if answer.complete and answer.error is not None:
            return Verdict((Failure("error", _reason(answer.error)),), 1)
        verdict = self.cascade.checks.judge(self.request, answer)
        if not verdict.passed or note.top_tier or not answer.complete:
            return verdict
        failure = await self.ask_judge(answer, note)
        if failure is None:
            return verdict
        return Verdict((failure,), verdict.judged + 1)

    def _end_held(
        self, exchange: Exchange, note: CascadeNote, held: Held, answer: Answer, verdict: Verdict
    ) -> None:
        """A held stream the client will not see: its attempt ends with what it cost (the
        engine's usage when the stream ended within the hold, else counted) and, when the
        stream broke, as the backend's failure."""
        exchange.cascade = self._judged(note, verdict, answer, "escalated")
        record = exchange.record
        assert record is not None
        tap = UsageTap()
        tap.feed(held.data)
        usage = tap.usage() if held.ended else None
        if usage is None:
            usage = Usage(
                prompt_tokens=record.work.prompt_tokens,
                completion_tokens=answer.completion_tokens or held.tokens,
                cached_tokens=None,
            )
        collected = CollectedResponse(
            content=answer.text,
            tool_calls=answer.tool_calls,
            finish_reason=answer.finish_reason,
            completion_tokens=answer.completion_tokens,
            done=held.ended,
        )
        error = held.error if isinstance(held.error, ApiError) else None
        if exchange.trace is not None:  # what the client will not see: as it was held
            exchange.trace.read_answer(held.data)
        exchange.escalated(200, usage, partial(kept, collected), complete=held.ended, error=error)

    def _judge_whole(
        self, note: CascadeNote, collected: CollectedResponse, whole: bool
    ) -> CascadeNote:
        """A committed stream's answer once it ended, judged for the record and, when it
        ended whole (not cut by the client, the backend or the deadline), for the book."""
        answer = answer_of(collected, complete=whole)
        verdict = self.cascade.checks.judge(self.request, answer)
        if whole:
            self.cascade.learn(self.kind, note.tier, failed=not verdict.passed)
        return replace(note, failures=verdict.failures)

    def _judged(
        self, note: CascadeNote, verdict: Verdict, answer: Answer, outcome: CascadeOutcome
    ) -> CascadeNote:
        values = answer.logprobs
        mean = math.fsum(values) / len(values) if values else None
        return replace(note, outcome=outcome, failures=verdict.failures, mean_logprob=mean)

    def headers(
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
        return {
            k: _printable(v) if k.startswith("x-switchyard-cascade") else v
            for k, v in headers.items()
        }


def _empty_start(answer: Answer) -> Verdict:
    """Commit mode: a start with content passes; one that ended empty does not."""
    if answer.complete and not answer.text.strip() and not answer.tool_calls:
        return Verdict((Failure("empty", "empty answer"),), 1)
    return Verdict((), 1)


def _printable(value: str) -> str:
    """A header value of printable ASCII (a user check's name could be anything)."""
    return "".join(c if " " <= c <= "~" else "?" for c in value)


def _reason(error: str) -> str:
    return error if len(error) <= 200 else error[:199] + "…"


def _mapping(document: object) -> dict[str, Any] | None:
    return document if isinstance(document, dict) else None


def _without_logprobs(response: UpstreamResponse) -> UpstreamResponse:
    """The answer without the log-probabilities the gateway asked for (a stream keeps
    them: its chunks go out as they came)."""
    document = response.document if isinstance(response.document, dict) else None
    document = document or parsed_json(response.body)
    choices = document.get("choices") if document is not None else None
    if document is None or not isinstance(choices, list):
        return response
    document = {
        **document,
        "choices": [
            {**c, "logprobs": None} if isinstance(c, dict) and "logprobs" in c else c
            for c in choices
        ],
    }
    return replace(response, body=orjson.dumps(document), document=document)


def parsed_json(body: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None

"""Dispatch: try the ranked candidates in order, within the retry budget and deadlines.

A retry is "the next acceptable candidate". Failures before the first byte move on; a
4xx from the backend is the client's problem and goes straight back. When a route has no
candidate left (none carrying the tags the request requires, all filtered out, or every
attempt failed before its first byte), the request moves on to the route's fallbacks,
each deciding among its own backends that carry those tags; the attempt budget and the
deadline are the request's, whichever route it is on. Each attempt asks its backend for
the model that route's member names, and holds a `Lease` on it; the one that answers is
handed to the caller, which finishes it when the response ends.
In-flight counts are released on every path, including cancellation.

A backend cooling down (its provider's 429, a spent budget) asked to be sent nothing until
a known time: when every backend a route's decision orders is cooling down, the request
waits for the soonest within its deadline and `retry.max_retry_after_s`, or leaves the
route (`RouteCoolingDown`: a fallback route, or the client's 429 with Retry-After).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from gateway.errors import (
    CapacityExhausted,
    NoBackendAvailable,
    PlacementUnsatisfiable,
    RequestShed,
    RouteCoolingDown,
)
from gateway.routing.decisions import Attempt, DecisionRecord, FallbackLeg
from gateway.routing.drop_params import without_params
from gateway.routing.lease import Lease, PrefixMemory
from policies.predict import predicted_ttft_ms
from providers.base import Deadlines, Provider, UpstreamRequest, UpstreamResponse, UpstreamStream
from providers.errors import ApiError, UpstreamError, UpstreamStatusError, UpstreamTimeout
from providers.native import refused_native, unspoken

if TYPE_CHECKING:
    from gateway.config.root import Config
    from gateway.fleet.state import FleetState
    from gateway.routing.attempt_trace import AttemptSpan, AttemptTracer
    from gateway.routing.router import Leg, RoutePlan
    from providers.rate_limits import RateLimitSignal


class _Answer(Protocol):
    """A whole response or an opened stream: both carry the provider's rate-limit signal."""

    @property
    def rate_limit(self) -> RateLimitSignal | None: ...


T = TypeVar("T", bound=_Answer)
AttemptFn = Callable[[Provider, Deadlines, UpstreamRequest], Awaitable[T]]
RequestFor = Callable[[str], UpstreamRequest]
"""The request to send for an upstream model id (the client's body, its `model` set)."""


class Dispatcher:
    def __init__(
        self,
        config: Config,
        state: FleetState,
        providers: Mapping[str, Provider],
        *,
        prefixes: PrefixMemory | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._state = state
        self._providers = providers
        self._prefixes = prefixes
        self._clock = clock
        self._dropped = {b.name: frozenset(b.drop_params) for b in config.backends if b.drop_params}

    def deadline(self) -> float:
        return self._clock() + self._config.timeouts.total_s

    async def send(
        self,
        record: DecisionRecord,
        plan: RoutePlan,
        request_for: RequestFor,
        deadline: float,
        *,
        trace: AttemptTracer | None = None,
    ) -> tuple[Lease, UpstreamResponse]:
        """The whole response and the lease of the backend that gave it, for the caller
        to `finish()`; `record.attempts[-1]` says which route and model answered.
        `trace`: the request's trace, told of each attempt (None: tracing is off)."""

        async def attempt(
            provider: Provider, deadlines: Deadlines, request: UpstreamRequest
        ) -> UpstreamResponse:
            return await provider.send(request, deadlines)

        trial = _Trial(record, attempt, request_for, deadline, streaming=False, trace=trace)
        return await self._try_routes(plan, trial)

    async def open_stream(
        self,
        record: DecisionRecord,
        plan: RoutePlan,
        request_for: RequestFor,
        deadline: float,
        *,
        first_token_by: float | None = None,
        trace: AttemptTracer | None = None,
    ) -> tuple[Lease, UpstreamStream]:
        """A stream past its first chunk and the committed backend's lease, for the
        caller to `finish()` when the stream ends. `first_token_by` (flow control's
        `cut_at_deadline`): no first chunk by then ends the request with RequestShed."""

        async def attempt(
            provider: Provider, deadlines: Deadlines, request: UpstreamRequest
        ) -> UpstreamStream:
            return await provider.open_stream(request, deadlines)

        trial = _Trial(record, attempt, request_for, deadline, True, first_token_by, trace)
        return await self._try_routes(plan, trial)

    async def _try_routes(self, plan: RoutePlan, trial: _Trial[T]) -> tuple[Lease, T]:
        """Each route of the plan in turn until one answers. The client gets the last
        attempt's error, or, when no attempt was made, the last route's that had members
        the request's tags allow; when no route had any, what each one lacked (400)."""
        leg: Leg | None = plan.first
        failed: UpstreamError | None = None
        empty: ApiError | None = None
        unplaced: list[str] = []
        while leg is not None:
            try:
                return await self._try_leg(leg, trial, last_route=not plan.has_fallback)
            except PlacementUnsatisfiable as exc:
                unplaced.append(why := exc.message)
            except (NoBackendAvailable, CapacityExhausted) as exc:
                empty, why = exc, exc.message
            except UpstreamError as exc:
                if not exc.retryable:
                    raise
                failed, why = exc, f"every attempt failed before its first byte ({exc.code})"
            leg = self._next_leg(plan, trial, why)
        error: ApiError | None = failed or empty
        if error is None and unplaced:
            error = PlacementUnsatisfiable("; ".join(unplaced))
        raise error or NoBackendAvailable("no route could serve this request")

    def _next_leg(self, plan: RoutePlan, trial: _Trial[T], why: str) -> Leg | None:
        """The plan's next route, decided, if the request may go on; `why` it left this
        one is recorded either way."""
        record, leg = trial.record, None
        if plan.has_fallback:
            stop = self._stop_reason(trial)
            leg = plan.fallback() if stop is None else None
            why = why if stop is None else f"{why}; {stop}"
        record.left.append(why)
        if leg is not None:
            record.fallbacks.append(FallbackLeg(leg.decision, leg.work, leg.placement))
        return leg

    def _stop_reason(self, trial: _Trial[T]) -> str | None:
        """Why the request may not go on to a fallback route, if it may not."""
        if not self._attempt_left(trial):
            return "no attempt left for its fallbacks"
        if self._clock() >= trial.deadline:
            return "deadline passed before its fallbacks"
        return None

    async def _try_leg(self, leg: Leg, trial: _Trial[T], *, last_route: bool) -> tuple[Lease, T]:
        if leg.placement.unmet or not leg.decision.order:
            raise self._no_candidate(leg)
        order = await self._cooled_order(leg, trial)
        last: UpstreamError | None = None
        while order and self._attempt_left(trial):
            if self._clock() >= trial.deadline:
                break
            if _first_token_due(trial, self._clock()):
                raise _no_first_token()
            name = order.pop(0)
            try:
                return await self._attempt(leg, name, trial)
            except UpstreamError as exc:
                if not exc.retryable:
                    raise
                # A backend's own failure says more than a skip of one that could not serve.
                last = last if refused_native(exc) and last is not None else exc
                # Waiting out a Retry-After is for the very last candidate of the request,
                # and only when an attempt is left to use after it.
                if (
                    not order
                    and last_route
                    and self._attempt_left(trial)
                    and await self._wait_retry_after(exc, trial.deadline)
                ):
                    order.append(name)
        if last is not None:
            raise last
        raise NoBackendAvailable("request deadline passed before any backend answered")

    def _attempt_left(self, trial: _Trial[T]) -> bool:
        return len(trial.record.attempts) < self._config.retry.max_attempts

    def _no_candidate(self, leg: Leg) -> ApiError:
        """The error saying why `leg`'s decision ordered no backend."""
        placement, decision = leg.placement, leg.decision
        if placement.unmet:
            return PlacementUnsatisfiable(placement.message())
        members = placement.members_phrase
        names = [c.backend for c in decision.candidates]
        if names and all(self._state.at_capacity(n) for n in names):
            return CapacityExhausted(
                f"every {members} is at max_concurrency or out of its provider's request budget"
            )
        cooling = self._cool_downs(names)
        if cooling is not None:
            return _cooling_down(members, min(cooling.values()))
        return NoBackendAvailable(f"no {members} can serve this request: {decision.picker_reason}")

    async def _cooled_order(self, leg: Leg, trial: _Trial[T]) -> list[str]:
        """The backends to try, in the decision's order. When every one of them is cooling
        down (kept only by panic mode), none is sent a request it asked not to get: the
        request waits for the soonest to come back if that is within the request's
        deadline and `retry.max_retry_after_s`, then tries those back; otherwise
        RouteCoolingDown (a fallback route, or the client's 429 with Retry-After)."""
        order = list(leg.decision.order)
        cooling = self._cool_downs(order)
        if cooling is None:
            return order
        soonest = min(cooling.values())
        within = self._clock() + soonest < trial.deadline
        if not within or soonest > self._config.retry.max_retry_after_s:
            raise _cooling_down(leg.placement.members_phrase, soonest)
        await asyncio.sleep(soonest)
        trial.record.cool_down_wait_ms += soonest * 1000.0
        return [name for name in order if cooling[name] <= soonest]

    def _cool_downs(self, names: list[str]) -> dict[str, float] | None:
        """Each backend's seconds left to cool down, when every one of `names` is cooling
        down (and nothing else keeps it out); None otherwise."""
        left: dict[str, float] = {}
        for name in names:
            seconds = self._state.cool_down_left_s(name)
            if seconds is None:
                return None
            left[name] = seconds
        return left or None

    async def _attempt(self, leg: Leg, name: str, trial: _Trial[T]) -> tuple[Lease, T]:
        started = self._clock()
        model = leg.route.model_for(name)
        request = trial.request_for(model)
        if (refused := unspoken(self._providers[name], name, request)) is not None:
            raise refused  # only a backend of the client's own API may serve it
        dropped = self._dropped.get(name)
        if dropped:
            request = without_params(request, dropped)
        breakpoints = leg.work.added_breakpoints(name)
        if breakpoints is not None:
            request = replace(request, cache_breakpoints=breakpoints)
        lease = Lease(
            name,
            leg.work,
            state=self._state,
            prefixes=self._prefixes,
            streaming=trial.streaming,
            clock=self._clock,
            budget_tokens=leg.budget_tokens,
            predicted_ttft_ms=_predicted_ttft_ms(leg, name) if trial.streaming else None,
        )
        attempts, route = trial.record.attempts, leg.route.name
        span: AttemptSpan | None = None
        if trial.trace is not None:
            span = trial.trace.attempt(name, route, model)
            request = replace(request, headers=span.headers)
        try:
            result = await self._attempt_once(name, trial, request, lease, (route, model), started)
        finally:
            if span is not None:
                span.ended(attempts[-1].outcome)
        return lease, result

    async def _attempt_once(
        self,
        name: str,
        trial: _Trial[T],
        request: UpstreamRequest,
        lease: Lease,
        asked: tuple[str, str],
        started: float,
    ) -> T:
        """One attempt on `name` (`asked`: for which route, which model), its outcome
        appended to the record's attempts."""
        (route, model), attempts = asked, trial.record.attempts
        try:
            deadlines = self._deadlines(name, trial)
            result = await trial.attempt(self._providers[name], deadlines, request)
        except UpstreamError as exc:
            if isinstance(exc, UpstreamTimeout) and _first_token_due(trial, self._clock()):
                # The request's own deadline, not the backend's failure: no evidence.
                lease.failed(None)
                attempts.append(Attempt(name, "ttft_deadline", self._ms_since(started), route))
                raise _no_first_token() from exc
            lease.failed(exc)
            outcome = exc.code or "error"
            attempts.append(Attempt(name, outcome, self._ms_since(started), route, model))
            raise
        except BaseException:
            lease.failed(None)
            attempts.append(Attempt(name, "cancelled", self._ms_since(started), route, model))
            raise
        lease.committed(result.rate_limit)
        attempts.append(Attempt(name, "ok", self._ms_since(started), route, model))
        return result

    def _deadlines(self, name: str, trial: _Trial[T]) -> Deadlines:
        timeouts = self._config.timeouts_for(name)
        now = self._clock()
        left = max(0.001, trial.deadline - now)
        first = min(timeouts.first_token_s, left)
        if trial.first_token_by is not None:
            first = min(first, max(0.001, trial.first_token_by - now))
        return Deadlines(
            connect_s=min(timeouts.connect_s, left),
            # A non-streaming answer arrives whole, after the full generation: only the
            # request's total deadline bounds it.
            first_byte_s=first if trial.streaming else left,
            between_chunks_s=timeouts.between_chunks_s,
            max_body_bytes=self._config.bounds.max_upstream_body_bytes,
            max_stream_bytes=self._config.bounds.max_upstream_stream_bytes,
        )

    async def _wait_retry_after(self, exc: UpstreamError, deadline: float) -> bool:
        """On the last candidate, a short Retry-After is worth waiting out once."""
        if not isinstance(exc, UpstreamStatusError) or exc.retry_after_s is None:
            return False
        wait = exc.retry_after_s
        if wait > self._config.retry.max_retry_after_s or self._clock() + wait >= deadline:
            return False
        await asyncio.sleep(wait)
        return True

    def _ms_since(self, started: float) -> float:
        return (self._clock() - started) * 1000.0


def _predicted_ttft_ms(leg: Leg, backend: str) -> float | None:
    """What the latency model predicted of `backend` when the leg was decided (read
    back from the snapshot's memo when a policy asked it already)."""
    snapshot = leg.snapshot
    view = snapshot.backends.get(backend) if snapshot is not None else None
    if snapshot is None or view is None:
        return None
    return predicted_ttft_ms(snapshot, view)


def _cooling_down(members: str, soonest_s: float) -> RouteCoolingDown:
    return RouteCoolingDown(
        f"every {members} is cooling down after its provider's 429 or spent budget; "
        f"the soonest is back in {soonest_s:.1f} s",
        retry_after_s=soonest_s,
    )


@dataclass(frozen=True, slots=True)
class _Trial(Generic[T]):
    """One request's dispatch: its record, how to make an attempt, and its deadlines."""

    record: DecisionRecord
    attempt: AttemptFn[T]
    request_for: RequestFor
    deadline: float
    streaming: bool
    first_token_by: float | None = None
    """Flow control's `cut_at_deadline`: the stream's first chunk must come by then."""
    trace: AttemptTracer | None = None
    """The request's trace, told of each attempt; None when tracing is off."""


def _first_token_due(trial: _Trial[T], now: float) -> bool:
    """Whether the stream's first-token deadline (`cut_at_deadline`) has passed."""
    by = trial.first_token_by
    return by is not None and now >= by - 0.001


def _no_first_token() -> RequestShed:
    return RequestShed(
        "no first token by the request's TTFT target: ended at its deadline "
        "(flow_control.cut_at_deadline)",
        code="deadline_unmeetable",
        retry_after_s=1.0,
    )

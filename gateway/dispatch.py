"""Dispatch: try the ranked candidates in order, within the retry budget and deadlines.

A retry is "the next acceptable candidate". Failures before the first byte move on; a
4xx from the backend is the client's problem and goes straight back. In-flight counts are
released on every path, including cancellation.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TypeVar

from gateway.config import Config
from gateway.decisions import Attempt, DecisionRecord
from gateway.errors import CapacityExhausted, NoBackendAvailable, UpstreamError, UpstreamStatusError
from gateway.fleet.state import FleetState
from gateway.routing import PromptWork
from providers.base import Deadlines, Provider, UpstreamRequest, UpstreamResponse, UpstreamStream

T = TypeVar("T")
AttemptFn = Callable[[Provider, Deadlines], Awaitable[T]]


class Dispatcher:
    def __init__(
        self,
        config: Config,
        state: FleetState,
        providers: Mapping[str, Provider],
        *,
        on_dispatch: Callable[[str, PromptWork], None] = lambda name, work: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._state = state
        self._providers = providers
        self._on_dispatch = on_dispatch
        self._clock = clock

    def deadline(self) -> float:
        return self._clock() + self._config.timeouts.total_s

    async def send(
        self, record: DecisionRecord, request: UpstreamRequest, deadline: float
    ) -> tuple[str, UpstreamResponse]:
        async def attempt(provider: Provider, deadlines: Deadlines) -> UpstreamResponse:
            # A non-streaming answer arrives whole, after the full generation: only the
            # request's total deadline bounds it.
            left = max(0.001, deadline - self._clock())
            return await provider.send(request, replace(deadlines, first_byte_s=left))

        return await self._try_in_order(record, attempt, deadline, hold=False)

    async def open_stream(
        self, record: DecisionRecord, request: UpstreamRequest, deadline: float
    ) -> tuple[str, UpstreamStream]:
        """Returns the committed backend; its in-flight slot is the caller's to release."""

        async def attempt(provider: Provider, deadlines: Deadlines) -> UpstreamStream:
            return await provider.open_stream(request, deadlines)

        return await self._try_in_order(record, attempt, deadline, hold=True)

    async def _try_in_order(
        self, record: DecisionRecord, attempt: AttemptFn[T], deadline: float, *, hold: bool
    ) -> tuple[str, T]:
        decision = record.decision
        if not decision.order:
            names = [c.backend for c in decision.candidates]
            if names and all(self._state.at_capacity(n) for n in names):
                raise CapacityExhausted(
                    f"every backend of route {decision.route!r} is at max_concurrency"
                )
            raise NoBackendAvailable(f"no backend can serve this request: {decision.picker_reason}")
        order = list(decision.order)
        last: UpstreamError | None = None
        for _ in range(self._config.retry.max_attempts):
            if not order or self._clock() >= deadline:
                break
            name = order.pop(0)
            try:
                result = await self._attempt(record, name, attempt, deadline, hold=hold)
            except UpstreamError as exc:
                if not exc.retryable:
                    raise
                last = exc
                if not order and await self._wait_retry_after(exc, deadline):
                    order.append(name)
                continue
            return name, result
        if last is not None:
            raise last
        raise NoBackendAvailable("request deadline passed before any backend answered")

    async def _attempt(
        self,
        record: DecisionRecord,
        name: str,
        attempt: AttemptFn[T],
        deadline: float,
        *,
        hold: bool,
    ) -> T:
        started = self._clock()
        uncached = record.work.uncached(name)
        queue_was_empty = self._state.acquire(name, uncached)
        self._on_dispatch(name, record.work)
        keep_slot = False
        try:
            result = await attempt(self._providers[name], self._deadlines(name, deadline))
            keep_slot = hold
        except UpstreamError as exc:
            self._note_failure(name, exc)
            record.attempts.append(Attempt(name, exc.code or "error", self._ms_since(started)))
            raise
        except BaseException:
            record.attempts.append(Attempt(name, "cancelled", self._ms_since(started)))
            raise
        finally:
            # Answered (first byte or whole body) or failed: either way no prefill is pending.
            self._state.prefill_done(name, uncached)
            if not keep_slot:
                self._state.release(name)
        if hold:
            self._state.decode_started(name)
            ttft_s = self._clock() - started
            self._state.estimates(name).observe_ttft(ttft_s, uncached, queue_was_empty)
        else:
            self._state.record_success(name)
        record.attempts.append(Attempt(name, "ok", self._ms_since(started)))
        return result

    def _deadlines(self, name: str, deadline: float) -> Deadlines:
        timeouts = self._config.timeouts_for(name)
        left = max(0.001, deadline - self._clock())
        return Deadlines(
            connect_s=min(timeouts.connect_s, left),
            first_byte_s=min(timeouts.first_token_s, left),
            between_chunks_s=timeouts.between_chunks_s,
        )

    def _note_failure(self, name: str, exc: UpstreamError) -> None:
        if isinstance(exc, UpstreamStatusError) and exc.upstream_status == 429:
            seconds = exc.retry_after_s if exc.retry_after_s is not None else 1.0
            self._state.cool_down(name, seconds, f"rate limited upstream for {seconds:.1f}s")
        elif exc.retryable:
            self._state.record_failure(name, exc.code or "error")

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

"""Dispatch: try the ranked candidates in order, within the retry budget and deadlines.

A retry is "the next acceptable candidate". Failures before the first byte move on; a
4xx from the backend is the client's problem and goes straight back. Each attempt holds a
`Lease` on its backend; the one that answers is handed to the caller, which finishes it
when the response ends. In-flight counts are released on every path, including
cancellation.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TypeVar

from gateway.config import Config
from gateway.decisions import Attempt, DecisionRecord
from gateway.errors import CapacityExhausted, NoBackendAvailable
from gateway.fleet.state import FleetState
from gateway.lease import Lease, PrefixMemory
from providers.base import Deadlines, Provider, UpstreamRequest, UpstreamResponse, UpstreamStream
from providers.errors import UpstreamError, UpstreamStatusError

T = TypeVar("T")
AttemptFn = Callable[[Provider, Deadlines], Awaitable[T]]


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

    def deadline(self) -> float:
        return self._clock() + self._config.timeouts.total_s

    async def send(
        self, record: DecisionRecord, request: UpstreamRequest, deadline: float
    ) -> tuple[Lease, UpstreamResponse]:
        """The whole response and the lease of the backend that gave it, for the caller
        to `finish()`."""

        async def attempt(provider: Provider, deadlines: Deadlines) -> UpstreamResponse:
            # A non-streaming answer arrives whole, after the full generation: only the
            # request's total deadline bounds it.
            left = max(0.001, deadline - self._clock())
            return await provider.send(request, replace(deadlines, first_byte_s=left))

        return await self._try_in_order(record, attempt, deadline, streaming=False)

    async def open_stream(
        self, record: DecisionRecord, request: UpstreamRequest, deadline: float
    ) -> tuple[Lease, UpstreamStream]:
        """A stream past its first chunk and the committed backend's lease, for the
        caller to `finish()` when the stream ends."""

        async def attempt(provider: Provider, deadlines: Deadlines) -> UpstreamStream:
            return await provider.open_stream(request, deadlines)

        return await self._try_in_order(record, attempt, deadline, streaming=True)

    async def _try_in_order(
        self, record: DecisionRecord, attempt: AttemptFn[T], deadline: float, *, streaming: bool
    ) -> tuple[Lease, T]:
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
                return await self._attempt(record, name, attempt, deadline, streaming)
            except UpstreamError as exc:
                if not exc.retryable:
                    raise
                last = exc
                if not order and await self._wait_retry_after(exc, deadline):
                    order.append(name)
        if last is not None:
            raise last
        raise NoBackendAvailable("request deadline passed before any backend answered")

    async def _attempt(
        self,
        record: DecisionRecord,
        name: str,
        attempt: AttemptFn[T],
        deadline: float,
        streaming: bool,
    ) -> tuple[Lease, T]:
        started = self._clock()
        lease = Lease(
            name,
            record.work,
            state=self._state,
            prefixes=self._prefixes,
            streaming=streaming,
            clock=self._clock,
        )
        try:
            result = await attempt(self._providers[name], self._deadlines(name, deadline))
        except UpstreamError as exc:
            lease.failed(exc)
            record.attempts.append(Attempt(name, exc.code or "error", self._ms_since(started)))
            raise
        except BaseException:
            lease.failed(None)
            record.attempts.append(Attempt(name, "cancelled", self._ms_since(started)))
            raise
        lease.committed()
        record.attempts.append(Attempt(name, "ok", self._ms_since(started)))
        return lease, result

    def _deadlines(self, name: str, deadline: float) -> Deadlines:
        timeouts = self._config.timeouts_for(name)
        left = max(0.001, deadline - self._clock())
        return Deadlines(
            connect_s=min(timeouts.connect_s, left),
            first_byte_s=min(timeouts.first_token_s, left),
            between_chunks_s=timeouts.between_chunks_s,
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

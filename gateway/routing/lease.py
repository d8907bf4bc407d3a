"""A request's hold on the backend chosen for it, from dispatch to the response's end.

The dispatcher opens one lease per attempt; the lease is the only way backend state
changes on the request path. `committed()` marks the first byte (the prefill is over, a
stream starts decoding, the provider's rate-limit headers are noted), `finish()` the end:
the slot is freed, health and the prefix index learn from what the engine reported. A
failed attempt ends with `failed()` (a 429 cools the backend down). Every path ends
exactly once, cancellation included, so in-flight counts never leak.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from providers.errors import (
    ApiError,
    UpstreamCredentialsRefused,
    UpstreamError,
    UpstreamNotReady,
    UpstreamStatusError,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from gateway.fleet.state import FleetState
    from gateway.prefix.work import PromptWork
    from providers.rate_limits import RateLimitSignal
    from providers.usage import Usage

_NOT_THE_BACKENDS = frozenset({"request_deadline"})
"""Outcomes of a relayed response that end it for the gateway's own reasons (the request's
total deadline passed mid-stream): no evidence against a backend that was still answering."""


class PrefixMemory(Protocol):
    """What the router's prefix index learns from dispatches and engine reports."""

    def remember(self, backend: str, work: PromptWork) -> None: ...

    def correct(self, backend: str, work: PromptWork, reported_cached: int) -> None: ...


class Lease:
    """One attempt's slot on one backend; see the module docstring for its life."""

    __slots__ = (
        "_clock",
        "_committed",
        "_done",
        "_predicted_ttft_ms",
        "_prefixes",
        "_queue_was_empty",
        "_started",
        "_state",
        "_uncached",
        "_work",
        "backend",
        "streaming",
    )

    def __init__(
        self,
        backend: str,
        work: PromptWork,
        *,
        state: FleetState,
        prefixes: PrefixMemory | None,
        streaming: bool,
        clock: Callable[[], float],
        budget_tokens: int = 0,
        predicted_ttft_ms: float | None = None,
    ) -> None:
        self.backend = backend
        self._predicted_ttft_ms = predicted_ttft_ms
        self.streaming = streaming
        self._state, self._prefixes, self._work, self._clock = state, prefixes, work, clock
        self._uncached = work.uncached(backend)
        self._started = clock()
        self._queue_was_empty = state.acquire(backend, self._uncached, budget_tokens)
        self._committed = self._done = False
        if prefixes is not None:
            prefixes.remember(backend, work)

    def committed(self, rate_limit: RateLimitSignal | None = None) -> None:
        """The first byte arrived (a whole body, for a non-streaming request), with what
        the answer's headers said of the provider's limits."""
        self._committed = True
        if rate_limit is not None:
            self._state.record_provider_limits(self.backend, rate_limit)
        self._state.prefill_done(self.backend, self._uncached)
        if self.streaming:
            self._state.decode_started(self.backend)
            ttft_s = self._clock() - self._started
            estimates = self._state.estimates(self.backend)
            estimates.observe_ttft(ttft_s, self._uncached, self._queue_was_empty)
            if self._predicted_ttft_ms is not None:
                estimates.observe_ttft_error(ttft_s * 1000.0, self._predicted_ttft_ms)

    def failed(self, error: UpstreamError | None) -> None:
        """The attempt ended before its first byte: `error`, or None when cancelled."""
        if self._done:
            return
        self._done = True
        # No prefill is pending either way.
        self._state.prefill_done(self.backend, self._uncached)
        self._state.release(self.backend)
        if error is not None:
            self._note_failure(error)

    def finish(
        self,
        usage: Usage | None,
        *,
        decode_s: float | None = None,
        error: ApiError | None = None,
        outcome: str = "ok",
    ) -> None:
        """The response ended: `outcome` "ok", or why not (`error` when the backend or the
        deadline broke it, none when the client left). Later calls do nothing."""
        if self._done:
            return
        self._done = True
        if self.streaming and self._committed:
            self._state.decode_ended(self.backend)
        self._state.release(self.backend)
        self._learn(usage, decode_s)
        if error is None and outcome == "ok":
            self._state.record_success(self.backend)
        elif error is not None and error.retryable and outcome not in _NOT_THE_BACKENDS:
            self._state.record_failure(self.backend, outcome)

    def _learn(self, usage: Usage | None, decode_s: float | None) -> None:
        """Fold the engine's report into the prefix index and the speed estimates: the
        stream's decode time as the gateway saw it, else the engine's own, and the
        engine's own prefill time when it reports one."""
        if usage is None:
            return
        if usage.cached_tokens is not None and self._prefixes is not None:
            self._prefixes.correct(self.backend, self._work, usage.cached_tokens)
        estimates = self._state.estimates(self.backend)
        if usage.prefill_ms is not None:
            uncached = usage.prompt_tokens - (usage.cached_tokens or 0)
            estimates.observe_engine_prefill(usage.prefill_ms / 1000.0, uncached)
        if decode_s is None and usage.decode_ms is not None:
            decode_s = usage.decode_ms / 1000.0
        if decode_s is not None:
            estimates.observe_tpot(decode_s, usage.completion_tokens)

    def _note_failure(self, exc: UpstreamError) -> None:
        name = self.backend
        if isinstance(exc, UpstreamNotReady):
            self._state.not_ready(name, exc.reason)
            return
        signal = exc.rate_limit if isinstance(exc, UpstreamStatusError) else None
        if isinstance(exc, UpstreamStatusError) and exc.upstream_status == 429:
            self._state.rate_limited(name, exc.retry_after_s, signal)
            return
        if signal is not None:
            self._state.record_provider_limits(name, signal, cool_spent=False)
        if isinstance(exc, UpstreamCredentialsRefused):
            self._state.credentials_refused(name, exc.message)
        elif exc.retryable:
            self._state.record_failure(name, exc.code or "error")

"""One client request on its way through the gateway, and its one way back.

The proxy fills an `Exchange` in as the request moves forward (arrival, route, decision,
quality context, the backend's lease, the relayed stream). It ends through one of three
calls, each once: `answered` (a whole response), `stream_closed` (a relayed stream ended,
however it ended) or `failed` (no backend answered, or the client left first). All three
take the same way back: the lease frees the backend and learns from the engine's report,
the request's record goes to telemetry, and the quality signals get their evidence after
the response has gone out.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from gateway.quality.signals.collect import CollectedResponse
from gateway.telemetry.record import ClientEndpoint, RequestRecord

if TYPE_CHECKING:
    from gateway.cascade.note import CascadeNote
    from gateway.http.relay.streaming import StreamOutcome
    from gateway.quality.signals.passive import QualityRecorder, RequestContext
    from gateway.routing.decisions import DecisionRecord
    from gateway.routing.lease import Lease
    from gateway.telemetry.pipe import TelemetryPipe
    from gateway.tenancy.caller import Caller
    from gateway.tracing.spans import TraceLeg
    from policies.snapshot import Endpoint
    from providers.errors import ApiError
    from providers.usage import Usage

Collect = Callable[[], CollectedResponse]

logger = logging.getLogger("switchyard")


def kept(collected: CollectedResponse) -> CollectedResponse:
    """`partial(kept, collected)`: a `Collect` of a response already parsed."""
    return collected


@dataclass(slots=True)
class Exchange:
    """What one request carries from ingress to telemetry (see the module docstring)."""

    pipe: TelemetryPipe
    recorder: QualityRecorder | None
    started: float
    key_id: str | None
    endpoint: Endpoint
    """What the gateway routes and forwards."""
    ingress: ClientEndpoint
    """The API the client called: what its record names."""
    route: str = ""
    stream: bool = False
    body: dict[str, Any] | None = None
    """The request body, kept for the store only when it stores prompts."""
    record: DecisionRecord | None = None
    quality: RequestContext | None = None
    """What the quality signals need of the request; None when it is not inspected."""
    lease: Lease | None = None
    relayed: StreamOutcome | None = None
    finished: bool = False
    caller: Caller | None = None
    """The client key's rules and team; None when client auth is off."""
    charge: Callable[[int], None] | None = None
    """Counts an answer's output tokens towards its tenant's service (flow control)."""
    cascade: CascadeNote | None = None
    """The attempt's place in a cascade (`gateway.http.cascade_leg`)."""
    judge_after: Callable[[CollectedResponse, bool], CascadeNote] | None = None
    """A cascade's stream committed before its checks judged the whole: judges the whole
    answer when the stream ends (and whether it ended whole), for the record."""
    decode_from: float | None = None
    """When the backend's first chunk came, where the client got it later (a cascade held
    the stream): the backend's decode time counts from here."""
    trace: TraceLeg | None = None
    """This exchange's part of the request's trace; None when tracing is off."""

    def answered(self, status: int, usage: Usage | None, collect: Collect) -> None:
        """A whole (non-streaming) response came back from the lease's backend."""
        assert self.lease is not None
        self.lease.finish(usage)
        self._finish(status, None, self.lease.backend, usage=usage)
        self._observe(self.lease.backend, collect)

    def escalated(
        self,
        status: int,
        usage: Usage | None,
        collect: Collect | None,
        *,
        complete: bool,
        error: ApiError | None = None,
    ) -> None:
        """A cascade's tier answered and the request goes on to the next tier: the lease
        ends with its usage (the engine's, or counted so far when the hold cut the answer
        off), its record is emitted, and a whole answer is quality evidence. `error`: the
        backend's stream broke while held (its failure, as on any stream)."""
        assert self.lease is not None
        code = (error.code or "error") if error is not None else None
        outcome = code or ("ok" if complete else "cascade_escalated")
        self.lease.finish(usage, error=error, outcome=outcome)
        self._finish(502 if error is not None else status, code, self.lease.backend, usage=usage)
        self._observe(self.lease.backend, collect if complete else None, code)

    def stream_closed(self) -> None:
        """The relayed stream ended: done, broken by the backend, or abandoned."""
        lease, outcome = self.lease, self.relayed
        assert lease is not None and outcome is not None
        try:
            outcome.settle()
            usage = outcome.tap.usage()
        except Exception:  # the lease must end whatever the stream's bytes were
            logger.exception("the usage of a stream from %s could not be read", lease.backend)
            usage = None
        first = outcome.first_chunk_at
        decode_start = self.decode_from or first
        decode_s = outcome.last_chunk_at - decode_start if decode_start is not None else None
        lease.finish(usage, decode_s=decode_s, error=outcome.error, outcome=outcome.status)
        collect: Collect | None = None
        if outcome.collector is not None:
            collect = outcome.collector.finish  # parsed on the next loop turn, as a rule
            if self.judge_after is not None:  # a cascade's record waits for its verdict
                collected = collect()
                self.cascade = self.judge_after(collected, outcome.status == "ok")
                collect = partial(kept, collected)
        error = None if outcome.status == "ok" else outcome.status
        ttft_s = first - self.started if first is not None else None
        self._finish(
            200,
            error,
            lease.backend,
            chunks=outcome.chunks,
            usage=usage,
            ttft_s=ttft_s,
            decode_s=decode_s,
        )
        if collect is not None:
            record = self._record()
            # The quality signals time the backend: its first byte, not the gateway's.
            upstream_ttft = record.attempts[-1].duration_ms / 1000 if record.attempts else None
            self._observe(lease.backend, collect, error, upstream_ttft, decode_s or 0.0)

    def failed(
        self, status: int, code: str | None, *, reason: str | None = None, logged: bool = True
    ) -> None:
        """No response reached the client from a backend: every attempt failed, none could
        be made, the gateway refused it after deciding (`reason`: why, cut; `logged`:
        whether its access-log line is written), or the client left before the first
        byte."""
        if self.lease is not None:  # answered, but the response never went out
            self.lease.finish(None, outcome=code or "error")
        self._finish(status, code, None, reason=reason, logged=logged)
        self._observe()

    def _record(self) -> DecisionRecord:
        assert self.record is not None
        return self.record

    def _finish(
        self,
        status: int,
        error: str | None,
        served_by: str | None,
        *,
        chunks: int | None = None,
        usage: Usage | None = None,
        ttft_s: float | None = None,
        decode_s: float | None = None,
        reason: str | None = None,
        logged: bool = True,
    ) -> None:
        self.finished = True
        if self.charge is not None and usage is not None:
            self.charge(usage.completion_tokens)
        record = self._record()
        record.status, record.served_by = status, served_by
        if self.trace is not None:
            served = record.served_attempt if served_by is not None else None
            model = served.model if served is not None else None
            outcome = self.cascade.outcome if self.cascade is not None else None
            self.trace.finish(status, error, usage, model, outcome)
        elapsed = time.monotonic() - self.started
        self.pipe.emit(
            RequestRecord(
                at=time.time() - elapsed,
                route=self.route,
                endpoint=self.ingress,
                stream=self.stream,
                key_id=self.key_id,
                team=self.caller.team if self.caller is not None else None,
                decision=record,
                status=status,
                error=error,
                backend=served_by,
                e2e_s=elapsed,
                ttft_s=ttft_s,
                decode_s=decode_s,
                usage=usage,
                chunks=chunks,
                body=self.body,
                reason=reason,
                logged=logged,
                cascade=self.cascade,
            )
        )

    def _observe(
        self,
        served_by: str | None = None,
        collect: Collect | None = None,
        error: str | None = None,
        ttft_s: float | None = None,
        decode_s: float | None = None,
    ) -> None:
        """Failed attempts and the response become quality evidence on the next loop turn,
        after the response has gone out: parsing the response happens there too."""
        recorder, context, record = self.recorder, self.quality, self._record()
        if recorder is None or context is None:
            return

        def observe() -> None:
            # Each attempt is evidence about the model it asked for (a route's members may
            # be asked for different ones).
            for attempt in record.attempts:
                if attempt.outcome != "ok":
                    model = attempt.model or None
                    recorder.failure(context, attempt.backend, attempt.outcome, model=model)
            if served_by is not None and collect is not None:
                served = record.served_attempt
                recorder.response(
                    context,
                    served_by,
                    collect(),
                    error_code=error,
                    ttft_s=ttft_s,
                    decode_s=decode_s,
                    model=served.model if served is not None and served.model else None,
                )

        asyncio.get_running_loop().call_soon(recorder.guarded, observe)

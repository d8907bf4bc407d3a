"""Passive quality evidence: what each request asked and each response said, into the book.

The gateway takes a small `RequestContext` when it routes a request (the tools declared,
a bounded sample of the prompt, the targets) and, once the response has reached the
client, hands it with the collected response to `QualityRecorder`. Evaluating the
signals runs after the response's last byte (the caller schedules it), never before.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.quality.config import SignalParams
from gateway.quality.signals.collect import CollectedResponse, observation_fields
from gateway.quality.signals.observation import Observation, Outcome, SignalEvent
from gateway.quality.signals.response_assembly import text_of
from gateway.quality.signals.rules import evaluate

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from gateway.quality.book.quality_book import QualityBook

logger = logging.getLogger("switchyard")
_SAMPLE_CHARS = 2048
_SYSTEM_SAMPLE_CHARS = 512
_MAX_TOOLS = 128
_TOOL_CALL_SIGNALS = frozenset({"tool_call_json", "tool_call_name", "tool_call_schema"})


@dataclass(frozen=True, slots=True)
class RequestContext:
    """The request's side of an observation, taken when it was routed."""

    model: str
    tools: Mapping[str, Any] | None = None
    tool_choice_required: bool = False
    max_tokens: int | None = None
    prompt_sample: str = ""
    prompt_tokens_local: int | None = None
    ttft_target_ms: float | None = None
    tpot_target_ms: float | None = None


def request_context(
    model: str,
    body: Mapping[str, Any],
    *,
    max_tokens: int | None,
    prompt_tokens: int | None,
    ttft_target_ms: float | None,
    tpot_target_ms: float | None,
) -> RequestContext:
    tools = declared_tools(body.get("tools"))
    choice = body.get("tool_choice")
    forced = choice == "required" or (isinstance(choice, dict) and choice.get("type") == "function")
    return RequestContext(
        model=model,
        tools=tools,
        tool_choice_required=bool(tools) and forced,
        max_tokens=max_tokens,
        prompt_sample=_prompt_sample(body),
        prompt_tokens_local=prompt_tokens or None,
        ttft_target_ms=ttft_target_ms,
        tpot_target_ms=tpot_target_ms,
    )


def classify_failure(code: str) -> tuple[Outcome, str]:
    """An attempt's error code as (outcome, error kind); 429 and an engine still loading
    its model are capacity, not quality."""
    if code in ("cancelled", "request_deadline", "client_disconnected"):
        return "cancelled", code  # the client's or the gateway's doing, not the backend's
    if code in ("upstream_429", "upstream_not_ready"):
        return "capacity", code
    if code.startswith("upstream_4"):
        return "client_error", code
    if code.startswith("upstream_5"):
        return "error", "server_error"
    kinds = {
        "upstream_timeout": "timeout",
        "upstream_connect_error": "connect",
        "upstream_protocol_error": "malformed",
    }
    return "error", kinds.get(code, code)


class QualityRecorder:
    """Evaluates finished responses and failed attempts and records the evidence."""

    def __init__(self, book: QualityBook, params: SignalParams | None = None) -> None:
        self.book = book
        self.params = params or SignalParams()
        self.observed = 0
        self.failed = 0

    def guarded(self, observe: Callable[[], None]) -> None:
        """Run one observation; a bug in it (or a backend's odd bytes) loses that evidence
        and is logged, with falling frequency, but never reaches a client."""
        try:
            observe()
        except Exception:  # evidence is optional; serving is not
            self.failed += 1
            if self.failed & (self.failed - 1) == 0:  # 1st, 2nd, 4th, 8th, ... failure
                logger.warning("quality observation failed (%d so far)", self.failed, exc_info=True)

    def failure(
        self, context: RequestContext, backend: str, code: str, *, model: str | None = None
    ) -> list[SignalEvent]:
        """A failed attempt; `model`: the one asked of `backend`, when not the context's."""
        outcome, kind = classify_failure(code)
        observation = Observation(backend, model or context.model, 0.0, outcome, error_kind=kind)
        return self._record(observation)

    def response(
        self,
        context: RequestContext,
        backend: str,
        collected: CollectedResponse,
        *,
        error_code: str | None = None,
        ttft_s: float | None = None,
        decode_s: float | None = None,
        model: str | None = None,
    ) -> list[SignalEvent]:
        """The response's evidence, recorded in the book and returned."""
        outcome: Outcome = "ok"
        kind: str | None = None
        if error_code is not None:
            outcome, kind = classify_failure(error_code)
        elif collected.error is not None or collected.malformed is not None:
            outcome, kind = "error", "malformed" if collected.malformed else "error_event"
        tokens = collected.completion_tokens
        tpot_s = decode_s / (tokens - 1) if decode_s is not None and tokens and tokens > 1 else None
        observation = Observation(
            backend=backend,
            model=model or context.model,
            at=0.0,
            outcome=outcome,
            error_kind=kind,
            prompt_tokens_local=context.prompt_tokens_local,
            max_tokens=context.max_tokens,
            tools=context.tools,
            tool_choice_required=context.tool_choice_required,
            prompt_sample=context.prompt_sample,
            ttft_s=ttft_s,
            tpot_s=tpot_s,
            ttft_target_ms=context.ttft_target_ms,
            tpot_target_ms=context.tpot_target_ms,
            **observation_fields(collected),
        )
        return self._record(observation)

    def _record(self, observation: Observation) -> list[SignalEvent]:
        events: list[SignalEvent] = evaluate(observation, self.params)
        tool_events = [e for e in events if e.signal in _TOOL_CALL_SIGNALS]
        if tool_events:
            # One verdict per tool-calling response as well: a backend whose calls fail in
            # three different ways must not look three times healthier than it is.
            worst = next((e for e in tool_events if e.bad), tool_events[0])
            events.append(SignalEvent("tool_call", worst.bad, "fidelity", worst.detail))
        if events:
            self.observed += 1
            self.book.record(observation.backend, observation.model, events)
        return events


def declared_tools(tools: object, limit: int = _MAX_TOOLS) -> dict[str, Any] | None:
    """A request's `tools` as name → parameters schema (`{}` when it gives none), the
    first `limit` of them; None when it declares none."""
    if not isinstance(tools, list) or not tools:
        return None
    out: dict[str, Any] = {}
    for tool in tools[:limit]:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            out[function["name"]] = function.get("parameters") or {}
    return out or None


def _prompt_sample(body: Mapping[str, Any]) -> str:
    """The system prompt's start and the last user message's end, bounded."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        prompt = body.get("prompt")
        return prompt[-_SAMPLE_CHARS:] if isinstance(prompt, str) else ""
    system = ""
    user: object = ""
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") in ("system", "developer") and not system:
            system = text_of(message.get("content"), " ")[:_SYSTEM_SAMPLE_CHARS]
        elif message.get("role") == "user":
            user = message.get("content")
    last = text_of(user, " ")[-_SAMPLE_CHARS:]
    return f"{system}\n{last}" if system else last

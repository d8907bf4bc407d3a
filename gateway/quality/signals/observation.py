"""The contract between what the gateway saw of a response and the quality signals.

An `Observation` is built once per finished response (off the relay path: after the
last byte reached the client) from the request's traits and the response's bytes.
Signals (`rules.py`) turn it into `SignalEvent`s; the score (`book/score.py`) folds those
into time-decayed estimates per backend and model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from collections.abc import Mapping

Outcome = Literal["ok", "error", "capacity", "client_error", "cancelled"]
"""ok: a complete answer. error: the backend failed (timeout, 5xx, malformed, cut stream).
capacity: 429 / overloaded, which says nothing about quality. client_error: a 4xx the
client caused. cancelled: the client left; no evidence either way."""

Dimension = Literal["fidelity", "sla"]
"""fidelity: is this the right model, served correctly. sla: is it fast (enough) now."""


@dataclass(frozen=True, slots=True)
class ToolCallSeen:
    """One tool call of the response's first choice, arguments as the backend sent them."""

    name: str
    arguments: str
    arguments_cut: bool = False
    """The arguments were longer than the collector's bound; `arguments` is their start."""


@dataclass(frozen=True, slots=True)
class Observation:
    """One response as the quality signals see it. Text fields are bounded by the builder."""

    backend: str
    model: str
    """The upstream model the request was served as (the route's model)."""
    at: float
    """Gateway clock (monotonic or a test's virtual clock), when the response ended."""
    outcome: Outcome
    error_kind: str | None = None
    """For outcome "error": timeout, server_error, connect, malformed, stream_cut, ..."""
    content: str = ""
    """The first choice's text (content), possibly cut to the builder's bound."""
    reasoning: str = ""
    """The first choice's reasoning text (`reasoning_content`), kept apart from content."""
    tool_calls: tuple[ToolCallSeen, ...] = ()
    finish_reason: str | None = None
    completion_tokens: int | None = None
    prompt_tokens_reported: int | None = None
    """`usage.prompt_tokens` as the backend reported it; None when it sent no usage."""
    prompt_tokens_local: int | None = None
    """The gateway's own count of the prompt (tiktoken or estimate)."""
    max_tokens: int | None = None
    tools: Mapping[str, Any] | None = None
    """The request's tools: function name -> its `parameters` JSON schema."""
    tool_choice_required: bool = False
    """The request forced a tool call (`tool_choice` "required" or a named function)."""
    prompt_sample: str = ""
    """A bounded sample of the prompt's text (its last user message), for script checks."""
    ttft_s: float | None = None
    tpot_s: float | None = None
    ttft_target_ms: float | None = None
    tpot_target_ms: float | None = None
    inspected_bytes_capped: bool = False
    """The response was longer than the inspection bound; text signals saw a prefix."""


@dataclass(frozen=True, slots=True)
class SignalEvent:
    """One piece of evidence: a named signal was good or bad on one response."""

    signal: str
    """e.g. "error", "tool_call_json", "tool_call_name", "tool_call_schema",
    "finish_reason", "repetition", "empty_output", "unexpected_script", "truncation",
    "max_tokens_hit", "ttft", "tpot", or a probe's "probe_logprob", "probe_tool_call",
    "probe_needle"."""
    bad: bool
    dimension: Dimension
    detail: str = ""
    """Why it was bad, in words ("arguments are not JSON: Expecting ',' at 41")."""
    weight: float = 1.0
    """Evidence weight of this event (1 for a request; probes may count more)."""
    extra: Mapping[str, float] = field(default_factory=dict)
    stratum: str = ""
    """For signals judged against peers: the kind of request (e.g. `text/7`), so that a
    backend is compared with its peers on the same kind of requests, not on another mix."""

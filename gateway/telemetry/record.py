"""One finished request, as the telemetry thread receives it, and what is derived from it.

The request path only fills in a `RequestRecord` (references and a few numbers); the
derived values (time per output token, cost, the policy that decided) are computed on the
telemetry thread, off the request path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from policies.pipeline import CandidateReports, Standing
from policies.prices import Prices, TokenUse

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from gateway.cascade.note import CascadeNote
    from gateway.routing.decisions import DecisionRecord
    from policies.decision import CandidateReport, Decision
    from providers.usage import Usage

_CLIENT_GONE = frozenset({"client_disconnected", "cancelled"})

ClientEndpoint = Literal["chat.completions", "completions", "embeddings", "messages", "responses"]
"""The API a client called: one the gateway routes as it is, or a translated client format
(`messages`: Anthropic's `/v1/messages`; `responses`: OpenAI's `/v1/responses`), both routed
as `chat.completions`. Five values: a bounded metric label."""


@dataclass(slots=True)
class RequestRecord:
    at: float
    """Wall-clock time (Unix seconds) the request arrived."""
    route: str
    endpoint: ClientEndpoint
    """The API the client called, not what the gateway forwarded (see `ClientEndpoint`)."""
    stream: bool
    key_id: str | None
    """A virtual key's id, or a short non-reversible id of a static key (never the key)."""
    decision: DecisionRecord
    status: int
    error: str | None
    backend: str | None
    e2e_s: float
    ttft_s: float | None = None
    """Streams only: arrival to the first relayed byte."""
    decode_s: float | None = None
    usage: Usage | None = None
    chunks: int | None = None
    body: Mapping[str, Any] | None = None
    """The parsed request, kept only when the store keeps prompts."""
    team: str | None = None
    """The virtual key's team, when it has one."""
    reason: str | None = None
    """Set only when the gateway refused the request itself after deciding (flow
    control's 429s, a route cooling down): the error message the client got, cut
    (`gateway.telemetry.refusals`)."""
    logged: bool = True
    """False when the refusals' bucket held its access-log line back."""
    cascade: CascadeNote | None = None
    """Set on each attempt of a request to a cascade (`gateway.cascade.note`)."""
    _deciding: DecidingPolicy | None = None
    _priced: tuple[Prices, float] | None = None
    """The last `cost_usd`: every sink prices the record, mostly at the same prices."""

    def deciding_policy(self, weights: Mapping[str, float]) -> DecidingPolicy:
        """Computed once per record, on the telemetry thread (every sink runs there)."""
        if self._deciding is None:
            self._deciding = deciding_policy(self.decision.decision, weights)
        return self._deciding

    @property
    def model(self) -> str:
        """The upstream model that served, else the route's model."""
        served = self.decision.served_attempt
        return served.model if served is not None and served.model else self.decision.decision.model

    @property
    def blamed_backend(self) -> str | None:
        """Who served it, or, when every attempt failed, the last backend tried."""
        if self.backend is not None:
            return self.backend
        attempts = self.decision.attempts
        return attempts[-1].backend if attempts else None

    @property
    def abandoned(self) -> bool:
        """The client went away before the answer ended."""
        return self.status == 499 or self.error in _CLIENT_GONE

    @property
    def status_class(self) -> str:
        return f"{self.status // 100}xx"

    @property
    def upstream_s(self) -> float:
        """Time spent waiting on backends before the response (or first byte) came, their
        cool-downs included (a route whose every backend was cooling down)."""
        waited_ms = self.decision.cool_down_wait_ms
        return (waited_ms + sum(a.duration_ms for a in self.decision.attempts)) / 1000.0

    @property
    def overhead_s(self) -> float:
        """The gateway's own time before the first byte: reading, routing, dispatching."""
        if self.ttft_s is not None:
            return max(0.0, self.ttft_s - self.upstream_s)
        if self.stream:  # no byte was relayed: only the decision is known to be ours
            return self.decision.decision.total_us / 1e6
        return max(0.0, self.e2e_s - self.upstream_s)

    @property
    def tpot_s(self) -> float | None:
        usage = self.usage
        if self.decode_s is None or usage is None or usage.completion_tokens < 2:
            return None
        return self.decode_s / (usage.completion_tokens - 1)

    @property
    def retries(self) -> int:
        """Failed attempts that moved on to another candidate."""
        return sum(1 for a in self.decision.attempts[:-1] if a.outcome != "ok")

    @property
    def predicted_cached_tokens(self) -> int:
        if self.backend is None:
            return 0
        return self.decision.served_work.cached_tokens.get(self.backend, 0)

    @property
    def reported_cached(self) -> bool:
        """The backend said how many prompt tokens it had cached (0 included)."""
        return self.usage is not None and self.usage.cached_tokens is not None

    def tokens(self) -> tuple[int, int, int]:
        """(prompt, engine-reported cached, completion) tokens; the prompt count is the
        router's estimate when the backend reported no usage."""
        usage = self.usage
        if usage is None:
            return self.decision.work.prompt_tokens, 0, 0
        return usage.prompt_tokens, usage.cached_tokens or 0, usage.completion_tokens

    def cost_usd(self, pricing: Prices | None) -> float:
        """What the answer cost at `pricing`, from the backend's usage: the tier of its
        prompt, cached reads, cache writes, reasoning and the fee. 0 without usage (no
        answer, or a backend that reports none) or without prices. Telemetry thread only
        (it keeps the last answer)."""
        usage = self.usage
        if pricing is None or usage is None:
            return 0.0
        priced = self._priced
        if priced is not None and priced[0] is pricing:
            return priced[1]
        cost = usage_cost_usd(pricing, usage)
        self._priced = (pricing, cost)
        return cost


def usage_cost_usd(pricing: Prices | None, usage: Usage) -> float:
    """What an answer's usage cost at `pricing` (0 without prices): the tier of its
    prompt, cached reads, cache writes (5-minute and 1-hour), reasoning and the fee."""
    if pricing is None:
        return 0.0
    written, long = usage.cache_write_tokens or 0, usage.cache_write_1h_tokens or 0
    return pricing.cost_of(
        TokenUse(
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens or 0,
            cache_write_tokens=max(0, written - long),
            cache_write_1h_tokens=min(long, written) if written else long,
            reasoning_tokens=usage.reasoning_tokens or 0,
        )
    )


@dataclass(frozen=True, slots=True)
class DecidingPolicy:
    name: str
    """The policy whose score most set the chosen backend apart (a bounded label)."""
    reason: str
    """Its reason for the chosen backend."""


def deciding_policy(decision: Decision, weights: Mapping[str, float]) -> DecidingPolicy:
    """Which policy made the difference: the weighted score gap between the chosen backend
    and the best other survivor; a filter when it left a single survivor."""
    chosen = decision.chosen
    if chosen is None:
        return DecidingPolicy("none", "no backend could take the request")
    candidates = decision.candidates
    # Straight from the plugins' answers while they are kept: the reports' numbers,
    # without making the reports (and only the one or two reasons used written).
    answers = candidates.answers() if isinstance(candidates, CandidateReports) else None
    outcomes: _Outcomes = answers if answers is not None else _Reports(candidates)
    standings = outcomes.standings()
    mine = {s.backend: i for i, s in enumerate(standings)}.get(chosen)
    if mine is None:
        return DecidingPolicy(decision.picker, decision.picker_reason)
    others = [s for s in standings if s.backend != chosen and s.dropped_by is None]
    if not others:
        return _by_filter(outcomes, standings, chosen)
    rival = max(others, key=lambda s: s.total).scores
    best, gap = "", 0.0
    for plugin, value in standings[mine].scores.items():
        diff = weights.get(plugin, 1.0) * (value - rival.get(plugin, 0.0))
        if diff > gap:
            best, gap = plugin, diff
    if not best:
        return DecidingPolicy(decision.picker, decision.picker_reason)
    return DecidingPolicy(best, outcomes.score_reason(mine, best))


class _Outcomes(Protocol):
    """What `deciding_policy` reads of a decision's candidates (see `AnswerTable`)."""

    def standings(self) -> list[Standing]: ...

    def score_reason(self, i: int, plugin: str) -> str: ...

    def drop_reason(self, i: int) -> str | None: ...


class _Reports:
    """`_Outcomes` of built reports (a decision read back, or one whose reports were read)."""

    def __init__(self, reports: Sequence[CandidateReport]) -> None:
        self._reports = reports

    def standings(self) -> list[Standing]:
        return [
            Standing(r.backend, r.total, r.dropped_by, {p: s.value for p, s in r.scores.items()})
            for r in self._reports
        ]

    def score_reason(self, i: int, plugin: str) -> str:
        return self._reports[i].scores[plugin].reason

    def drop_reason(self, i: int) -> str | None:
        return self._reports[i].drop_reason


def _by_filter(outcomes: _Outcomes, standings: list[Standing], chosen: str) -> DecidingPolicy:
    dropped: dict[str, int] = {}
    example: dict[str, str] = {}
    for i, standing in enumerate(standings):
        if standing.dropped_by is not None:
            dropped[standing.dropped_by] = dropped.get(standing.dropped_by, 0) + 1
            if standing.dropped_by not in example:
                example[standing.dropped_by] = outcomes.drop_reason(i) or ""
    if not dropped:
        return DecidingPolicy("only-candidate", f"{chosen} is the route's only backend")
    name = max(dropped, key=lambda k: dropped[k])
    return DecidingPolicy(name, f"only {chosen} passed; e.g. {example[name]}")

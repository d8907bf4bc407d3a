"""Typed settings of the quality scores: how evidence decays, when to demote, how to probe."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gateway.config.strict import StrictConfig


class SignalParams(BaseModel):
    """Thresholds of the passive signals; the defaults keep false alarms near zero."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    length_margin_tokens: int = Field(
        16, ge=0, description='"length" this many tokens short of max_tokens is still fine.'
    )
    length_margin_ratio: float = Field(
        0.05, ge=0, le=1, description="... or this share of max_tokens, whichever is larger."
    )
    assumed_context_tokens: int = Field(
        32_768,
        ge=1,
        description='Smallest context window assumed; an early "length" counts only when '
        "prompt + max_tokens fits in it (else the window, not the backend, may have ended it).",
    )
    repetition_min_words: int = Field(32, ge=3, description="Shorter answers are not judged.")
    repetition_window_chars: int = Field(8192, ge=256, description="The end of the answer read.")
    repetition_max_period_words: int = Field(200, ge=1, description="Longest repeated unit.")
    repetition_min_repeats: float = Field(4.0, ge=2, description="Back-to-back copies of a unit.")
    repetition_min_loop_words: int = Field(24, ge=1, description="Words the loop must cover.")
    repetition_min_share: float = Field(
        0.4,
        gt=0,
        le=1,
        description="Share of the read words a loop covers, unless it runs "
        "to the end of the answer (a loop to the end is bad at any share).",
    )
    script_window_chars: int = Field(8192, ge=256, description="The start of the answer read.")
    script_min_letters: int = Field(20, ge=1, description="Fewer letters are not judged.")
    script_min_unexpected: int = Field(8, ge=1, description="Unexpected letters, at least.")
    script_max_share: float = Field(
        0.05, ge=0, le=1, description="Unexpected letters above this share of all are bad."
    )
    truncation_min_local_tokens: int = Field(
        256, ge=1, description="Shorter prompts are not judged (estimates are rough)."
    )
    truncation_min_ratio: float = Field(
        0.7,
        gt=0,
        le=1,
        description="Reported prompt tokens below this share of the local count are bad; "
        "local counts are estimates and tokenisers differ.",
    )


class SignalTolerance(StrictConfig):
    """How much of one signal is normal, and how much is clearly broken.

    A signal's score is 1 while its bad rate (the lower confidence bound, so that a few
    unlucky responses do not count as proof) stays at or below `tolerated`, falls
    linearly to 0 at `broken`, and stays there above it.
    """

    tolerated: float = Field(0.02, ge=0, le=1)
    broken: float = Field(0.25, gt=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> SignalTolerance:
        if self.broken <= self.tolerated:
            raise ValueError("broken must be above tolerated")
        return self


_tol = SignalTolerance
# Rates a healthy provider shows on real traffic: a few percent of errors and of tool-call
# slips is normal; loops, truncation and a drifting canary are not.
DEFAULT_TOLERANCES: dict[str, SignalTolerance] = {
    "error": _tol(tolerated=0.05, broken=0.4),
    "tool_call": _tol(tolerated=0.03, broken=0.3),
    "tool_call_json": _tol(tolerated=0.02, broken=0.25),
    "tool_call_name": _tol(tolerated=0.02, broken=0.25),
    "tool_call_schema": _tol(tolerated=0.03, broken=0.3),
    "finish_reason": _tol(tolerated=0.03, broken=0.3),
    "repetition": _tol(tolerated=0.01, broken=0.2),
    "empty_output": _tol(tolerated=0.03, broken=0.3),
    "unexpected_script": _tol(tolerated=0.02, broken=0.25),
    "truncation": _tol(tolerated=0.02, broken=0.2),
    "max_tokens_hit": _tol(tolerated=0.1, broken=0.5),
    "ttft": _tol(tolerated=0.1, broken=0.6),
    "tpot": _tol(tolerated=0.1, broken=0.6),
    "probe_logprob": _tol(tolerated=0.0, broken=0.3),
    "probe_tool_call": _tol(tolerated=0.05, broken=0.4),
    "probe_needle": _tol(tolerated=0.05, broken=0.4),
}


class ProbeConfig(StrictConfig):
    """Active probes of every backend: cheap, scheduled and budgeted."""

    enabled: bool = Field(True, description="Run probes at all.")
    interval_s: float = Field(300.0, gt=0, description="One probe cycle per backend and model.")
    timeout_s: float = Field(30.0, gt=0, description="Each probe request, whole.")
    canary: bool = Field(True, description="Logprob canary: fixed prompts, one token.")
    tool_call: bool = Field(True, description="A forced tool call checked against its schema.")
    needle: bool = Field(True, description="A long-context needle: is early context kept?")
    needle_tokens: int = Field(4000, ge=64, le=1_000_000, description="Needle probe's context.")
    max_tokens_per_hour: int = Field(
        100_000, ge=0, description="Probe budget per backend (prompt + completion tokens)."
    )
    drift_threshold: float = Field(
        0.15, gt=0, le=1, description="Canary drift (total variation of top logprobs) alarm."
    )
    weight: float = Field(2.0, gt=0, description="Evidence weight of one probe result.")
    suspect_probes: bool = Field(
        True, description="Probe a suspect with requests like those under suspicion."
    )
    suspect_interval_s: float = Field(
        10.0, gt=0, description="One targeted probe per suspect this often."
    )
    suspect_max_tokens_per_hour: int = Field(
        30_000, ge=0, description="Budget of the targeted probes per backend."
    )


class QualityConfig(StrictConfig):
    """Live quality scores per backend and model (see docs/quality.md)."""

    enabled: bool = True
    half_life_s: float = Field(
        600.0, gt=0, description="Evidence loses half its weight in this time."
    )
    recent_window: float = Field(
        20.0, gt=1, description="Responses in the fast estimate that catches a sudden fault."
    )
    prior_weight: float = Field(
        2.0, ge=0, description="Pseudo-responses at the tolerated rate every estimate starts from."
    )
    min_evidence: float = Field(
        5.0, gt=0, description="Decayed responses a signal needs before it can demote."
    )
    confidence_z: float = Field(1.645, gt=0, description="z of the rate's lower bound (95%).")
    recent_confidence_z: float = Field(
        2.576, gt=0, description="The same for the recent estimate (99.5%): few responses."
    )
    demote_below: float = Field(0.8, gt=0, lt=1)
    certain_below: float = Field(
        0.25,
        ge=0,
        lt=1,
        description="Fidelity below this ejects at once; between it and 1 the pair is a "
        "suspect, ejected only when fresh evidence convicts it (see book/suspicion.py).",
    )
    restore_above: float = Field(0.9, gt=0, le=1)
    trial_false_ejection: float = Field(
        0.01,
        gt=0,
        lt=0.5,
        description="A suspect's trial ejects a backend at its tolerated rate with at most "
        "this chance (the SPRT's alpha; book/suspicion.py).",
    )
    trial_false_clearance: float = Field(
        0.05,
        gt=0,
        lt=0.5,
        description="... and clears one as far above the ejection level with at most this "
        "chance (beta).",
    )
    ejection_base_s: float = Field(30.0, gt=0, description="First ejection's length.")
    ejection_max_s: float = Field(900.0, gt=0, description="Cap on the doubling back-off.")
    ejection_jitter: float = Field(0.2, ge=0, le=1, description="Up to this share longer.")
    forgive_after_s: float = Field(
        1800.0, gt=0, description="Healthy this long: the back-off starts over."
    )
    history_size: int = Field(360, ge=1, le=100_000, description="Score samples kept per pair.")
    history_interval_s: float = Field(10.0, gt=0, description="Score sampling period.")
    audit_size: int = Field(
        32, ge=1, le=10_000, description="State changes kept per pair with their evidence."
    )
    max_pairs: int = Field(1024, ge=1, description="Backend x model pairs tracked, at most.")
    show_details: bool = Field(
        False,
        description="Show each signal's last bad detail on the quality API. Off: details "
        "can quote what a backend answered, and every client key may read the API.",
    )
    signals: dict[str, SignalTolerance] = Field(
        default_factory=dict, description="Per-signal overrides of DEFAULT_TOLERANCES."
    )
    probes: ProbeConfig = Field(default_factory=ProbeConfig)
    thresholds: SignalParams = Field(
        default_factory=SignalParams, description="When each passive signal calls a response bad."
    )
    inspect_share: float = Field(
        1.0, ge=0, le=1, description="Share of responses inspected (by decision id)."
    )

    @model_validator(mode="after")
    def _hysteresis(self) -> QualityConfig:
        if self.restore_above <= self.demote_below:
            raise ValueError("restore_above must be above demote_below (hysteresis)")
        if self.certain_below > self.demote_below:
            raise ValueError("certain_below must not be above demote_below")
        return self

    def tolerance(self, signal: str) -> SignalTolerance:
        """The signal's tolerance: the override, the built-in default, or a strict one."""
        return self.signals.get(signal) or DEFAULT_TOLERANCES.get(signal) or _FALLBACK


_FALLBACK = SignalTolerance()

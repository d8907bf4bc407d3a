"""Issue 13's targets, checked per matrix cell for the cache-aware profile.

Each requirement compares cache-aware's row with a reference row of the same (cell, seed,
load), SGLang's router's or least-load's, or with its own offline bound. A verdict is
`met`, `missed`, or `n/a` when either row is missing, failed, or lacks the measure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bench.replay.profiles import SGLANG

SUBJECT = "cache-aware"
LEAST_LOAD = "least-load"
HIT_SLACK = 0.01
"""Hits may trail SGLang's by one point (0.01 of the hit ratio)."""
OFFLINE_SHARE = 0.95
IMBALANCE_MAX = 1.3
TTFT_NOISE = 0.10
"""On unique prompts TTFT p90 may exceed least-load's by this share: single runs on the
shared machine move TTFT percentiles by 5-10 % (docs/replay.md, Limits)."""

Verdict = Literal["met", "missed", "n/a"]
Row = Mapping[str, Any]


@dataclass(frozen=True)
class Requirement:
    """One target: `holds(subject, reference)` on rows that measured what it reads."""

    name: str
    against: str | None
    """The policy whose row is the reference; None: the subject's row alone."""
    reads: tuple[str, ...]
    holds: Callable[[Row, Row], bool]
    families: frozenset[str] | None = None
    """Only cells of these families; None: every cell."""


def _at_least(key: str, slack: float = 0.0) -> Callable[[Row, Row], bool]:
    return lambda row, ref: bool(row[key] >= ref[key] - slack)


def _at_most(key: str, share: float = 0.0) -> Callable[[Row, Row], bool]:
    return lambda row, ref: bool(row[key] <= ref[key] * (1 + share))


REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement("goodput >= SGLang", SGLANG, ("goodput_ratio",), _at_least("goodput_ratio")),
    Requirement("good req/s >= SGLang", SGLANG, ("goodput_rps",), _at_least("goodput_rps")),
    Requirement(
        "hits >= SGLang - 1 pt",
        SGLANG,
        ("token_cache_hit_ratio",),
        _at_least("token_cache_hit_ratio", HIT_SLACK),
    ),
    Requirement("TTFT p90 <= SGLang", SGLANG, ("ttft_ms_p90",), _at_most("ttft_ms_p90")),
    Requirement(
        "hits >= 0.95 x offline bounded",
        None,
        ("token_cache_hit_ratio", "offline_bounded_at_pace"),
        lambda row, _: (
            row["token_cache_hit_ratio"] >= OFFLINE_SHARE * row["offline_bounded_at_pace"]
        ),
    ),
    Requirement(
        "imbalance <= 1.3",
        None,
        ("imbalance_requests", "imbalance_prompt_tokens"),
        lambda row, _: (
            max(row["imbalance_requests"], row["imbalance_prompt_tokens"]) <= IMBALANCE_MAX
        ),
    ),
    Requirement(
        "unique: TTFT p90 <= least-load + 10 %",
        LEAST_LOAD,
        ("ttft_ms_p90",),
        _at_most("ttft_ms_p90", TTFT_NOISE),
        families=frozenset({"unique"}),
    ),
)


@dataclass(frozen=True)
class Check:
    requirement: str
    verdict: Verdict
    why: str
    """For `n/a`: what was missing; otherwise empty."""


def _usable(policy: str, row: Row | None, keys: tuple[str, ...]) -> str:
    """Why `row` cannot be judged on `keys`, or "" when it can."""
    if row is None:
        return f"no {policy} row"
    if row.get("error"):
        return f"{policy} failed"
    missing = [key for key in keys if row.get(key) is None]
    return f"{policy} lacks {', '.join(missing)}" if missing else ""


def check(requirement: Requirement, by_policy: Mapping[str, Row]) -> Check:
    """The verdict of one requirement on one cell's rows (keyed by policy)."""
    subject = by_policy.get(SUBJECT)
    why = _usable(SUBJECT, subject, requirement.reads)
    reference = subject
    if not why and requirement.against is not None:
        reference = by_policy.get(requirement.against)
        why = _usable(requirement.against, reference, requirement.reads)
    if why or subject is None or reference is None:
        return Check(requirement.name, "n/a", why)
    verdict: Verdict = "met" if requirement.holds(subject, reference) else "missed"
    return Check(requirement.name, verdict, "")


def applicable(family: str) -> tuple[Requirement, ...]:
    return tuple(r for r in REQUIREMENTS if r.families is None or family in r.families)


def check_cell(by_policy: Mapping[str, Row], family: str) -> list[Check]:
    """Every requirement that applies to a cell of `family`, in `REQUIREMENTS` order."""
    return [check(requirement, by_policy) for requirement in applicable(family)]

"""The learned starting tier: a request whose kind lately failed a tier's checks often
starts above that tier, so doomed first tries are skipped.

`KindBook` keeps, per (kind, tier), the decayed count of attempts and of failures (a
half-life; bounded, least recently seen first out): bookkeeping, outside the policy.
`start_tier` is the policy: a pure function of those counts, the params and one random
draw, with its evidence in the reason.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.cascade.config import CascadeStartConfig


def request_kind(
    prompt_tokens: int, body: Mapping[str, Any], key_id: str | None, *, endpoint: str = "chat"
) -> str:
    """The features a kind is made of: the prompt's length band (doubling from 256
    tokens), tools or not, the response format asked, the client key."""
    band = max(0, (max(prompt_tokens, 1) - 1) // 256).bit_length()
    tools = "tools" if body.get("tools") else "no-tools"
    asked = body.get("response_format")
    fmt = asked.get("type") if isinstance(asked, Mapping) else None
    return f"{endpoint}|len{band}|{tools}|{fmt if isinstance(fmt, str) else 'text'}|{key_id or '-'}"


@dataclass(frozen=True, slots=True)
class TierEvidence:
    """A kind's decayed record on one tier."""

    attempts: float = 0.0
    failures: float = 0.0

    @property
    def failure_rate(self) -> float:
        return self.failures / self.attempts if self.attempts > 0 else 0.0


@dataclass(frozen=True, slots=True)
class StartChoice:
    tier: int
    reason: str
    skipped: int = 0
    """Tiers skipped for their evidence."""


def start_tier(
    evidence: Sequence[TierEvidence],
    names: Sequence[str],
    params: CascadeStartConfig,
    draw: float,
) -> StartChoice:
    """The first tier this kind should try: the lowest one whose evidence does not say it
    fails (`failure_rate` over at least `min_samples` decayed attempts); the last tier
    always qualifies. `draw` (uniform in [0, 1)) below `explore` tries the first tier
    that would be skipped anyway."""
    if not params.learned:
        return StartChoice(0, "learned start off")
    reasons: list[str] = []
    for tier, seen in enumerate(evidence[: len(names) - 1]):
        doomed = seen.attempts >= params.min_samples and seen.failure_rate >= params.failure_rate
        if not doomed:
            break
        if draw < params.explore:
            return StartChoice(
                tier,
                f"exploring {names[tier]!r}, although this kind failed its checks there "
                f"{_share(seen)} lately",
            )
        reasons.append(f"{names[tier]!r} skipped: this kind failed its checks there {_share(seen)}")
    else:
        tier = len(names) - 1
    if not reasons:
        return StartChoice(tier, "first tier")
    return StartChoice(tier, "; ".join(reasons), skipped=len(reasons))


def _share(seen: TierEvidence) -> str:
    rate = round(100 * seen.failure_rate)
    return f"{seen.failures:.1f} of {seen.attempts:.1f} times ({rate}%)"


class KindBook:
    """Decayed attempts and failures per (kind, tier) of one cascade, bounded."""

    __slots__ = ("_entries", "_half_life_s", "_max")

    def __init__(self, max_kinds: int, half_life_s: float) -> None:
        self._max = max_kinds
        self._half_life_s = half_life_s
        self._entries: OrderedDict[str, list[tuple[float, float, float]]] = OrderedDict()
        """kind → per tier (attempts, failures, at)."""

    def __len__(self) -> int:
        return len(self._entries)

    def evidence(self, kind: str, tiers: int, now: float) -> list[TierEvidence]:
        rows = self._entries.get(kind)
        if rows is None:
            return [TierEvidence()] * tiers
        found = [self._decayed(row, now) for row in rows[:tiers]]
        return found + [TierEvidence()] * (tiers - len(found))

    def record(self, kind: str, tier: int, tiers: int, failed: bool, now: float) -> None:
        rows = self._entries.get(kind)
        if rows is None:
            rows = self._entries[kind] = [(0.0, 0.0, now)] * tiers
            if len(self._entries) > self._max:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(kind)
        if tier >= len(rows):
            return
        seen = self._decayed(rows[tier], now)
        rows[tier] = (seen.attempts + 1.0, seen.failures + (1.0 if failed else 0.0), now)

    def _decayed(self, row: tuple[float, float, float], now: float) -> TierEvidence:
        attempts, failures, at = row
        factor = math.exp2(-max(0.0, now - at) / self._half_life_s)
        return TierEvidence(attempts * factor, failures * factor)

    def carry_over(self, previous: KindBook) -> None:
        """A reload keeps what the previous generation learned (same cascade)."""
        self._entries = previous._entries
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

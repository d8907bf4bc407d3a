"""Finds degenerate loops in generated text: one unit of words repeated back to back.

A broken deployment (bad quantisation, wrong chat template, a sampler bug) often ends in
a loop: the same phrase, sentence or paragraph over and over until max_tokens. What sets
that apart from prose, code, tables or JSON is *exact* periodicity: word i equals word
i - p for a long run. Lists, tables and arrays of similar objects repeat their shape but
not their values, so the run breaks at every row.

Cost is linear in the words: candidate periods come from the gaps between repeats of the
same trigram (one pass), and only the three commonest are scanned (one pass each).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

# Scripts written without spaces: each character counts as a word.
_UNSPACED = "\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(f"[{_UNSPACED}]|[^\\s{_UNSPACED}]+")
_CANDIDATE_PERIODS = 3


@dataclass(frozen=True, slots=True)
class Loop:
    """The longest back-to-back repetition found in a text."""

    unit: tuple[str, ...]
    """The repeated words (case-folded), once."""
    words: int
    """Words the repetition covers, from the unit's first occurrence."""
    total_words: int
    """Words analysed."""
    reaches_end: bool
    """The repetition runs to the end of the text (give or take a cut last word)."""

    @property
    def repeats(self) -> float:
        return self.words / len(self.unit)

    @property
    def share(self) -> float:
        return self.words / self.total_words if self.total_words else 0.0


def words_of(text: str) -> list[str]:
    """Whitespace-separated words, case-folded; each CJK or Thai character is a word."""
    if text.isascii():  # the common case, in C: same words as the expression's
        return text.lower().split()
    return _WORD.findall(text.casefold())


def has_repeated_trigram(words: Sequence[str]) -> bool:
    """Some three words in a row occur twice. Without, no unit repeats back to back over
    three words or more, and `find_loop` finds nothing: a cheap test for most answers."""
    count = len(words) - 2
    return count > 1 and len(set(zip(words, words[1:], words[2:], strict=False))) < count


def find_loop(words: Sequence[str], *, max_period: int) -> Loop | None:
    """The longest repetition of a unit of at most `max_period` words; None if none.

    "Longest" counts the words after the unit's first copy: that is what was redundant,
    and it keeps a long unit seen twice from hiding a short one seen sixty times.
    """
    ids = _interned(words)
    best: tuple[int, int, int] | None = None  # (repeated words, -period, end index)
    for period in _candidate_periods(ids, max_period):
        run, end = _longest_run(ids, period)
        if run > 0 and (best is None or (run, -period, end) > best):
            best = (run, -period, end)
    if best is None:
        return None
    period, end = -best[1], best[2]
    covered = best[0] + period
    start = end - covered + 1
    return Loop(
        unit=tuple(words[start : start + period]),
        words=covered,
        total_words=len(words),
        reaches_end=end >= len(words) - 2,
    )


def _interned(words: Sequence[str]) -> list[int]:
    numbers: dict[str, int] = {}
    return [numbers.setdefault(word, len(numbers)) for word in words]


def _candidate_periods(ids: list[int], max_period: int) -> list[int]:
    """The commonest distances between a trigram and its previous occurrence."""
    last_seen: dict[tuple[int, int, int], int] = {}
    gaps: Counter[int] = Counter()
    for index, trigram in enumerate(zip(ids, ids[1:], ids[2:], strict=False)):
        previous = last_seen.get(trigram)
        if previous is not None and index - previous <= max_period:
            gaps[index - previous] += 1
        last_seen[trigram] = index
    return [gap for gap, _ in gaps.most_common(_CANDIDATE_PERIODS)]


def _longest_run(ids: list[int], period: int) -> tuple[int, int]:
    """Longest run of i with ids[i] == ids[i - period]: its length and last index."""
    best, best_end, run = 0, 0, 0
    for index, (earlier, later) in enumerate(zip(ids, ids[period:], strict=False)):
        if earlier == later:
            run += 1
            if run > best:
                best, best_end = run, index + period
        else:
            run = 0
    return best, best_end

"""Answers for every candidate at once: a column of values and a reason function.

A filter or scorer may return any mapping from backend name to `Verdict` / `Score`; the
built-in ones return these instead. They hold one list of values (keep flags, scores)
aligned with the candidates they were given, plus a reason function and per-candidate
argument columns, and make a `Verdict` or `Score` only when one is looked up by name.
The pipeline reads the value column directly when the answer is about the very list of
candidates it passed, so a decision makes no per-candidate answer objects at all; the
decisions API, which reads reasons, makes them later; the telemetry thread reads values
and writes reasons by position (`position`, `reason_at`, `reasons`), making none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial

from policies.base import Score, Verdict
from policies.snapshot import BackendView


class _Columns:
    __slots__ = ("_args", "_index", "_why", "candidates")

    def __init__(
        self,
        candidates: Sequence[BackendView],
        column: Sequence[object],
        why: Callable[..., str],
        args: tuple[Sequence[object], ...],
    ) -> None:
        n = len(candidates)
        short = len(column) != n
        for arg in args:  # a plain loop: this runs for every plugin of every decision
            short = short or len(arg) != n
        if short:
            # A short column would silently drop or unscore candidates; fail at once.
            lengths = [len(c) for c in (column, *args)]
            raise ValueError(f"{len(candidates)} candidates but columns of lengths {lengths}")
        self.candidates = candidates
        self._why = why
        self._args = args
        self._index: dict[str, int] | None = None

    def position(self, name: str) -> int | None:
        """Where `name` is among the candidates (its last place, should it repeat)."""
        index = self._index
        if index is None:
            index = self._index = {b.name: i for i, b in enumerate(self.candidates)}
        return index.get(name)

    def reasons(self) -> list[str]:
        """Every candidate's reason, written now."""
        if not self._args:
            return [self._why() for _ in self.candidates]
        return list(map(self._why, *self._args))

    def reason_at(self, i: int) -> str:
        """The reason for `candidates[i]`, written now."""
        return self._why(*[column[i] for column in self._args])

    def _position(self, name: str) -> int:
        i = self.position(name)
        if i is None:
            raise KeyError(name)
        return i

    def _reason(self, i: int) -> partial[str]:
        return partial(self._why, *(column[i] for column in self._args))

    def __iter__(self) -> Iterator[str]:
        return (b.name for b in self.candidates)

    def __len__(self) -> int:
        return len(self.candidates)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.position(name) is not None


class Verdicts(_Columns, Mapping[str, Verdict]):
    """A filter's verdicts: `keep[i]` for `candidates[i]`, the reason
    `why(*(column[i] for column in args))`."""

    __slots__ = ("keep",)

    def __init__(
        self,
        candidates: Sequence[BackendView],
        keep: Sequence[bool],
        why: Callable[..., str],
        *args: Sequence[object],
    ) -> None:
        super().__init__(candidates, keep, why, args)
        self.keep = keep

    def __getitem__(self, name: str) -> Verdict:
        i = self._position(name)
        return Verdict(self.keep[i], self._reason(i))


class Scores(_Columns, Mapping[str, Score]):
    """A scorer's scores: `value[i]` for `candidates[i]`, the reason
    `why(*(column[i] for column in args))`."""

    __slots__ = ("value",)

    def __init__(
        self,
        candidates: Sequence[BackendView],
        value: Sequence[float],
        why: Callable[..., str],
        *args: Sequence[object],
    ) -> None:
        super().__init__(candidates, value, why, args)
        self.value = value

    def __getitem__(self, name: str) -> Score:
        i = self._position(name)
        return Score(self.value[i], self._reason(i))

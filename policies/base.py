"""The routing contracts: the roles, what each returns, and the three plugin protocols.

Filters keep or drop candidates, scorers give each candidate a value in [0, 1], a picker
orders the survivors. Every answer carries a short human-readable reason. Policies are
pure: they read the immutable snapshot (`policies.snapshot`) and return values; recording,
counting and ejecting happen outside them. What a decision produces is in
`policies.decision`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, runtime_checkable

from policies.snapshot import BackendView, Snapshot
from policies.strict_model import StrictModel

if TYPE_CHECKING:
    # Only named in the picker's signature; policies.decision builds on this module.
    from policies.decision import Ranked

Role = Literal["filter", "scorer", "picker", "order"]
"""`order`: an admission queue's ordering policy (`policies.order`), never in a routing
profile."""


Reason = str | Callable[[], str]
"""A reason, or a function that writes one. Policies that explain every candidate of every
request pass a function (e.g. `functools.partial(describe, b, numbers)`): the text is only
formatted when someone reads it (the API, the log writer), off the decision's hot path."""


def _text(reason: Reason) -> str:
    return reason if isinstance(reason, str) else reason()


@dataclass(frozen=True, slots=True, eq=False)
class Verdict:
    """A filter's answer about one candidate: keep it or drop it, and why.

    Two are equal when their values and reason texts are (a reason may be a callable that
    renders it). Plugins answer in columns (`policies.answers`), so few of these are made
    per decision: frozen dataclasses, not hand-slotted classes (the A/B in
    docs/benchmarks.md found no difference).
    """

    keep: bool
    why: Reason

    @property
    def reason(self) -> str:
        return _text(self.why)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Verdict):
            return NotImplemented
        return (self.keep, self.reason) == (other.keep, other.reason)

    def __hash__(self) -> int:
        return hash((self.keep, self.reason))

    def __repr__(self) -> str:
        return f"Verdict(keep={self.keep!r}, reason={self.reason!r})"


@dataclass(frozen=True, slots=True, eq=False)
class Score:
    """A scorer's answer about one candidate: a value in [0, 1], higher is better, and why."""

    value: float
    why: Reason

    @property
    def reason(self) -> str:
        return _text(self.why)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Score):
            return NotImplemented
        return (self.value, self.reason) == (other.value, other.reason)

    def __hash__(self) -> int:
        return hash((self.value, self.reason))

    def __repr__(self) -> str:
        return f"Score(value={self.value!r}, reason={self.reason!r})"


@dataclass(frozen=True, slots=True)
class Pick:
    """A picker's answer: the order in which to try backends (first = chosen)."""

    order: tuple[str, ...]
    reason: str


class PolicyParams(StrictModel):
    """Base for every policy's typed parameters: unknown keys are errors (suggesting the
    closest parameter), values are frozen."""


@runtime_checkable
class Filter(Protocol):
    """Keeps or drops candidates; later plugins see only the survivors."""

    role: ClassVar[Role]
    type_name: ClassVar[str]
    """Kebab-case with the role suffix, e.g. `healthy-filter`; the built-ins' registry key."""
    name: str
    """The plugin's name in its profile: the declared policy's name, or the type name."""

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        """Return a verdict for every candidate, keyed by backend name."""
        ...


@runtime_checkable
class Scorer(Protocol):
    """Gives each surviving candidate a value in [0, 1]; the pipeline weights them."""

    role: ClassVar[Role]
    type_name: ClassVar[str]
    name: str

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        """Return a score in [0, 1] for every candidate, keyed by backend name."""
        ...


@runtime_checkable
class Picker(Protocol):
    """Orders the ranked survivors; the first is chosen, the rest are the retries."""

    role: ClassVar[Role]
    type_name: ClassVar[str]
    name: str

    def pick(self, snapshot: Snapshot, ranked: Sequence[Ranked]) -> Pick:
        """Order the ranked survivors; the dispatcher tries them in that order."""
        ...


Policy = Filter | Scorer | Picker

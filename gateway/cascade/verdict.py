"""A cascade's checks, bound once per config, and their verdict on one answer."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.cascade.checks.registry import BoundCheck, bind

if TYPE_CHECKING:
    from gateway.cascade.answer import Answer, CheckRequest
    from gateway.cascade.config import CheckConfig


logger = logging.getLogger("switchyard")


@dataclass(frozen=True, slots=True)
class Failure:
    """A check an answer failed, and why."""

    check: str
    reason: str

    def describe(self) -> dict[str, str]:
        return {"check": self.check, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the checks said of one answer: every failure, not only the first."""

    failures: tuple[Failure, ...] = ()
    judged: int = 0
    """Checks that ran (a held start is judged only by those that can judge a start)."""

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def names(self) -> str:
        """The failed checks' names, comma-separated ("" when it passed)."""
        return ", ".join(f.check for f in self.failures)


class CascadeChecks:
    """The checks of one cascade, in their declared order."""

    __slots__ = ("_checks", "asks_logprobs")

    def __init__(self, declared: Sequence[CheckConfig]) -> None:
        self._checks: tuple[BoundCheck, ...] = tuple(bind(c.check, c.params) for c in declared)
        self.asks_logprobs = any(c.check.asks_logprobs for c in self._checks)
        """A check reads log-probabilities: the tiers before the last are asked for them."""

    def judge(self, request: CheckRequest, answer: Answer) -> Verdict:
        """Every check on a complete answer; on a held start, those that can judge one."""
        failures: list[Failure] = []
        judged = 0
        for check in self._checks:
            if not answer.complete and not check.check.judges_start:
                continue
            judged += 1
            try:
                reason = check(request, answer)
            except Exception:  # a user's check with a bug: no evidence, and said in the log
                logger.exception(
                    "answer check %s raised; the answer is not judged by it", check.name
                )
                continue
            if reason is not None:
                failures.append(Failure(check.name, reason))
        return Verdict(tuple(failures), judged)

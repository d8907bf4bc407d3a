"""One cascade request: its body, its ground truth, and the grader of its kind."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from bench.workloads.cascade.grading import Answer, grade_call, grade_document, grade_short

Kind = Literal["extraction", "tools", "short", "nested-extraction"]
KINDS: tuple[Kind, ...] = ("extraction", "tools", "short")
"""The kinds a small model can attempt, and a mixed workload draws from by default."""
HARD_KIND: Kind = "nested-extraction"
"""The always-hard kind: a small model nearly always fails it (a learned start tier's test)."""

Truth = dict[str, Any] | str
"""Extraction: the fields' values; tools: ``{"name", "arguments"}``; short: the answer."""

_GRADERS: dict[Kind, Callable[[Any, Answer], bool]] = {
    "extraction": grade_document,
    "nested-extraction": grade_document,
    "tools": grade_call,
    "short": grade_short,
}


@dataclass(frozen=True)
class CascadeRequest:
    """A request with a checkable answer."""

    id: str
    """``{kind}-{seed}-{index}``: unique within a workload."""
    kind: Kind
    task: str
    """What within the kind: the entity (``order``), the tool (``get_weather``), or
    ``arithmetic`` / ``lookup``."""
    body: dict[str, Any]
    """An OpenAI chat-completions request body (``model``, ``messages``, ...)."""
    truth: Truth

    def grade(self, answer: Answer) -> bool:
        """Whether ``answer`` (a text, or OpenAI ``tool_calls``) is right."""
        return _GRADERS[self.kind](self.truth, answer)

    def line(self) -> dict[str, Any]:
        """The request as a JSON Lines record."""
        return {
            "id": self.id,
            "kind": self.kind,
            "task": self.task,
            "body": self.body,
            "truth": self.truth,
        }

    @classmethod
    def from_line(cls, line: Mapping[str, Any]) -> CascadeRequest:
        kind = line["kind"]
        if kind not in get_args(Kind):
            raise ValueError(f"unknown kind {kind!r}")
        return cls(line["id"], cast(Kind, kind), line["task"], line["body"], line["truth"])


def grade(request: CascadeRequest, answer: Answer) -> bool:
    """Whether ``answer`` is right for ``request`` (``request.grade``)."""
    return request.grade(answer)

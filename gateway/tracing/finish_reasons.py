"""An answer's finish reasons (`gen_ai.response.finish_reasons`), read from its bytes: a
whole answer's body, or a stream's chunks as the relay hands them over in batches. No
parse: every `"finish_reason": "..."` that is a string (a stream's `null`s are not), one
per choice that finished, in the order they came."""

from __future__ import annotations

import re

_REASON = re.compile(rb'"finish_reason"\s*:\s*"([^"\\]{0,64})"')
MAX_REASONS = 16
"""Kept at most (one per choice: `n` rarely exceeds a few)."""
_MAX_CARRY = 64 * 1024


def finish_reasons(data: bytes) -> list[str]:
    """The finish reasons in a whole answer's body (or in complete SSE lines)."""
    if b'"finish_reason"' not in data:
        return []
    return [m.group(1).decode() for m in _REASON.finditer(data)][:MAX_REASONS]


class FinishReasonTap:
    """A stream's finish reasons, fed its bytes in batches cut anywhere: only complete
    lines are read, the rest waits for the next batch (bounded)."""

    __slots__ = ("_carry", "reasons")

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self._carry = b""

    def feed(self, data: bytes) -> None:
        if self._carry:
            data = self._carry + data
        cut = data.rfind(b"\n") + 1
        self._carry = data[cut:][-_MAX_CARRY:]
        if cut and len(self.reasons) < MAX_REASONS:
            self.reasons += finish_reasons(data[:cut])

"""Cache breakpoints the host asks an explicit-caching adapter to add to one request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

BreakpointTtl = Literal["5m", "1h"]

AFTER_TOOLS = -1
"""A boundary after the tools alone; message boundaries are indexes from 0."""


@dataclass(frozen=True, slots=True)
class CacheBreakpoints:
    """Where cached prefixes should end: after each of these messages of the OpenAI body's
    `messages` (`AFTER_TOOLS`: after the tools), with this retention. An adapter whose API
    has no explicit caching ignores it; one that has adds them only when the client set
    none of its own."""

    after_messages: tuple[int, ...]
    ttl: BreakpointTtl = "5m"

"""Prompt-cache breakpoints the host asks for, placed on a Messages request's blocks.

The Messages API caches only prefixes that end at a block carrying `cache_control`
(tools, then system, then messages, in that order). The host names boundaries as OpenAI
message indexes (`providers.cache_breakpoints`); each goes on the last block the message
became, or the one before when it became none. A request the client marked itself is
left as it is (`to_messages_request` checks), and no request gets more than the API's 4:
one whose client marked more is refused before it is sent (`count_marked`).
"""

from __future__ import annotations

from collections.abc import Sequence

from providers.anthropic.messages_wire import (
    CacheControlParam,
    ContentBlock,
    MessagesRequest,
    TextBlock,
    ToolParam,
)
from providers.cache_breakpoints import AFTER_TOOLS, CacheBreakpoints

MAX_BREAKPOINTS = 4
"""The most `cache_control` blocks one request may carry."""

Marked = TextBlock | ContentBlock | ToolParam


def add_breakpoints(
    body: MessagesRequest,
    ends: Sequence[TextBlock | ContentBlock | None],
    breakpoints: CacheBreakpoints,
) -> int:
    """Mark the block ending each boundary of `breakpoints`; how many were marked."""
    control: CacheControlParam = {"type": "ephemeral"}
    if breakpoints.ttl != "5m":
        control["ttl"] = breakpoints.ttl
    tools = body.get("tools") or []
    marked = 0
    for index in breakpoints.after_messages:
        block = _block_ending(index, ends, tools)
        if block is None or "cache_control" in block:
            continue
        block["cache_control"] = control.copy()
        marked += 1
        if marked == MAX_BREAKPOINTS:
            break
    return marked


def count_marked(body: MessagesRequest) -> int:
    """The blocks of `body` that carry `cache_control` (tools, system, turns' content)."""
    blocks: list[Marked] = [*body.get("tools", ()), *body.get("system", ())]
    for turn in body["messages"]:
        blocks.extend(turn["content"])
    return sum("cache_control" in block for block in blocks)


def _block_ending(
    index: int, ends: Sequence[TextBlock | ContentBlock | None], tools: Sequence[ToolParam]
) -> Marked | None:
    """The last block of message `index` or, when it became none, of the one before."""
    for i in range(min(index, len(ends) - 1), AFTER_TOOLS, -1):
        block = ends[i]
        if block is not None:
            return block
    return tools[-1] if tools else None

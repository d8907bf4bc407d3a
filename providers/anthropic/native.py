"""A client's own Messages request, sent on as it came (`NativeRequest`).

Nothing of it is translated: thinking and redacted-thinking blocks keep their signatures,
fields this adapter does not know reach the API, and the client's `anthropic-version` and
`anthropic-beta` headers go with it. The host has already set the backend's model id.
What may change is what routing asks: the host's prompt-cache breakpoints, added only when
the client marked nothing itself. The host names them as indexes of the OpenAI messages the
request became at the gateway's edge; `_ends` maps each back to the Messages block that
ended it, by the edge's rules (the system first, each tool result its own message ahead of
the rest of its user turn, an assistant turn one message).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from providers.anthropic.cache_breakpoints import add_breakpoints
from providers.anthropic.messages_wire import MessagesRequest
from providers.base import NativeRequest
from providers.cache_breakpoints import CacheBreakpoints


def native_body(request: NativeRequest, breakpoints: CacheBreakpoints | None) -> bytes:
    """The body to send: the client's, with the host's breakpoints when it set none."""
    if breakpoints is None or request.marked:
        return request.body
    document: Any = orjson.loads(request.body)
    ends = _ends(document)
    if not add_breakpoints(document, ends, breakpoints):
        return request.body
    return orjson.dumps(document)


def native_headers(request: NativeRequest, extra: Mapping[str, str] | None) -> dict[str, str]:
    """The host's per-request headers (`traceparent`) and the client's Anthropic ones (the
    host passes on only those), which replace the adapter's own `anthropic-version` when
    the client sent one."""
    return {**(extra or {}), **request.headers}


def _ends(document: MessagesRequest) -> list[Any]:
    """For each OpenAI message the request became, the block that ends it (None when it
    has none to mark). Strings become one text block, so that they can carry a mark."""
    ends: list[Any] = []
    system = document.get("system")
    if system:
        if isinstance(system, str):
            document["system"] = system = [{"type": "text", "text": system}]
        ends.append(system[-1])
    for turn in document["messages"]:
        content: Any = turn["content"]
        if isinstance(content, str):
            turn["content"] = content = [{"type": "text", "text": content}]
        if turn["role"] == "assistant":
            # Never a thinking block: Anthropic refuses cache_control on one.
            ends.append(
                next((b for b in reversed(content) if b.get("type") not in _THINKING), None)
            )
            continue
        results = [block for block in content if block.get("type") == "tool_result"]
        rest = [block for block in content if block.get("type") != "tool_result"]
        ends.extend(results)
        # The edge's user message holds the rest and the tool results' images.
        imaged = [block for block in results if _has_image(block)]
        if rest or imaged or not results:
            ends.append(rest[-1] if rest else imaged[-1] if imaged else None)
    return ends


_THINKING = ("thinking", "redacted_thinking")


def _has_image(result: Any) -> bool:
    inner = result.get("content")
    return isinstance(inner, list) and any(part.get("type") == "image" for part in inner)

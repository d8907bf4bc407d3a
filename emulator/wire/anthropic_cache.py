"""Anthropic's prompt cache order: a Messages request's blocks as a provider cache reads them.

The API caches in the order tools, system, messages, each content block a boundary; a
block marked ``cache_control`` is a breakpoint (``ttl: "1h"`` asks for the long
retention). A text block counts as its text, any other block as its canonical JSON (the
mark itself left out), each prefixed by where it stands so roles never collide.
"""

from __future__ import annotations

import orjson

from emulator.provider_cache import CachePiece
from emulator.wire.api_format import Json


def cache_pieces(body: Json) -> tuple[CachePiece, ...]:
    """The prompt's blocks in the API's cache order (tools, system, messages), each marked
    where it carries ``cache_control``; none when no block does (nothing is cached)."""
    blocks: list[tuple[bytes, object]] = []
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        blocks.append((b"tool\x1f" + _canonical(tool), tool))
    system = body.get("system")
    for block in system if isinstance(system, list) else [system] if system else []:
        blocks.append((b"system\x1f" + _block_bytes(block), block))
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        role = str(message.get("role", "")).encode() if isinstance(message, dict) else b""
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else [content]:
            blocks.append((role + b"\x1f" + _block_bytes(block), block))
    pieces = tuple(CachePiece(data, *_breakpoint(block)) for data, block in blocks)
    return pieces if any(piece.breakpoint for piece in pieces) else ()


def _breakpoint(block: object) -> tuple[bool, bool]:
    control = block.get("cache_control") if isinstance(block, dict) else None
    if not isinstance(control, dict):
        return False, False
    return True, control.get("ttl") == "1h"


def _block_bytes(block: object) -> bytes:
    """A text block (or string) as its text, any other block as its canonical JSON."""
    if isinstance(block, str):
        return block.encode("utf-8", "surrogatepass")
    if isinstance(block, dict) and block.get("type") == "text":
        return str(block.get("text", "")).encode("utf-8", "surrogatepass")
    return _canonical(block)


def _canonical(block: object) -> bytes:
    if isinstance(block, dict):
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return orjson.dumps(block, option=orjson.OPT_SORT_KEYS)

"""What a batched engine caches: the rendered prompt cut into chained, hash-addressed blocks.

Block ids chain like vLLM's: each id hashes the previous id with the block's bytes, so
an id names the whole prefix up to and including its block. The chain starts from a
digest of the model name, so two models never share blocks. A final partial block has no
id: it cannot be cached.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

# How many trailing parts (messages) a new prompt may add to a remembered one and still
# reuse its block ids: a chat turn adds two (assistant, user), tool loops a few more.
_LOOKBACK_PARTS = 8
_ID_BYTES = 8


@dataclass(frozen=True, slots=True)
class PromptBlocks:
    """A prompt as the KV cache sees it: its estimated length and its full blocks' ids."""

    tokens: int
    block_ids: tuple[bytes, ...]


def render_chat(body: dict[str, Any]) -> list[bytes]:
    """A chat prompt in engine order: the tools JSON (``b""`` without tools), then messages.

    One part per message lets ``PromptHasher`` recognise a previous turn's prompt.
    """
    tools = body.get("tools")
    parts = [orjson.dumps(tools, option=orjson.OPT_SORT_KEYS) if tools else b""]
    messages = body.get("messages")
    if isinstance(messages, list):
        parts.extend(_render_message(message) for message in messages if isinstance(message, dict))
    return parts


def render_completion(prompts: Sequence[str]) -> list[bytes]:
    """A text completion's prompts, in order, as one prompt."""
    return [prompt.encode("utf-8", "surrogatepass") for prompt in prompts]


def _render_message(message: dict[str, Any]) -> bytes:
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    elif not isinstance(content, str):
        content = ""
    rendered = f"<|{message.get('role')}|>\n{content}\n".encode("utf-8", "surrogatepass")
    calls = message.get("tool_calls")
    if calls:
        rendered += orjson.dumps(calls, option=orjson.OPT_SORT_KEYS) + b"\n"
    return rendered


class PromptHasher:
    """Turns rendered prompts into ``PromptBlocks``, reusing the ids of earlier prompts.

    A conversation's next turn is the previous prompt plus a few messages, so the ids
    of remembered prompts (keyed by model and per-part hashes, LRU-bounded) are reused
    and only the new tail is hashed.
    """

    def __init__(
        self, block_tokens: int = 16, bytes_per_token: float = 4.0, memo_entries: int = 1024
    ) -> None:
        self.block_tokens = block_tokens
        self.bytes_per_token = bytes_per_token
        self.block_bytes = max(1, round(block_tokens * bytes_per_token))
        self._memo_entries = memo_entries
        self._memo: OrderedDict[tuple[object, ...], tuple[bytes, ...]] = OrderedDict()
        self._salts: dict[str, bytes] = {}

    def blocks(self, model: str, parts: Sequence[bytes]) -> PromptBlocks:
        text = b"".join(parts)
        tokens = max(1, math.ceil(len(text) / self.bytes_per_token))
        # Python's bytes hash (SipHash) is ~20x cheaper than hashing block by block.
        key: tuple[object, ...] = (model, *map(hash, parts))
        ids = self._extend(model, text, self._remembered_prefix(key))
        self._remember(key, ids)
        return PromptBlocks(tokens, ids)

    def _remembered_prefix(self, key: tuple[object, ...]) -> tuple[bytes, ...]:
        memo = self._memo
        # Longest first; end >= 2 keeps at least one part besides the model.
        for end in range(len(key), max(1, len(key) - _LOOKBACK_PARTS - 1), -1):
            prefix = key[:end]
            ids = memo.get(prefix)
            if ids is not None:
                memo.move_to_end(prefix)
                return ids
        return ()

    def _extend(self, model: str, text: bytes, known: tuple[bytes, ...]) -> tuple[bytes, ...]:
        size = self.block_bytes
        full = len(text) // size
        if len(known) >= full:
            return known[:full]
        previous = known[-1] if known else self._salt(model)
        blake2b = hashlib.blake2b
        fresh: list[bytes] = []
        for start in range(len(known) * size, full * size, size):
            block = text[start : start + size]
            previous = blake2b(previous + block, digest_size=_ID_BYTES).digest()
            fresh.append(previous)
        return known + tuple(fresh)

    def _remember(self, key: tuple[object, ...], ids: tuple[bytes, ...]) -> None:
        memo = self._memo
        memo[key] = ids
        memo.move_to_end(key)
        while len(memo) > self._memo_entries:
            memo.popitem(last=False)

    def _salt(self, model: str) -> bytes:
        salt = self._salts.get(model)
        if salt is None:
            salt = hashlib.blake2b(model.encode(), digest_size=_ID_BYTES).digest()
            self._salts[model] = salt
        return salt

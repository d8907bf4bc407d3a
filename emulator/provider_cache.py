"""A cloud provider's prompt cache, as the emulator models it for its cloud formats.

Unlike the batched engine's KV cache (bounded by memory, filled by whatever it computes),
a provider's prompt cache is bounded by time and follows the provider's rules:

- ``automatic`` (OpenAI, DeepSeek): every prompt of at least ``min_prefix_tokens`` is
  cached at each ``increment_tokens`` step above the minimum; a later prompt reads the
  longest cached step it starts with.
- ``explicit`` (Anthropic): only prefixes that end at a block marked ``cache_control``
  are written (``cache_creation_input_tokens``); a later request reads the longest
  written prefix that ends at one of the content block boundaries up to
  ``LOOKBACK_BLOCKS`` before one of its own breakpoints (``cache_read_input_tokens``).

Entries live ``ttl_s`` from their last use (``ttl_1h_s`` for breakpoints asking for 1 h);
a read refreshes the entry read. Tokens are the emulator's (``bytes_per_token``).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

LOOKBACK_BLOCKS = 20
"""How many content blocks before a breakpoint the provider looks for an earlier entry."""
_KEY_BYTES = 16


class PromptCacheOptions(BaseModel):
    """An emulated cloud provider's prompt cache (an ``emulator`` block's ``prompt_cache``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    semantics: Literal["automatic", "explicit"] = Field(
        description="automatic: OpenAI's or DeepSeek's; explicit: Anthropic's cache_control."
    )
    min_prefix_tokens: int = Field(1024, ge=1, description="Shorter prefixes are not cached.")
    increment_tokens: int = Field(128, ge=1, description="Automatic: cached in these steps.")
    ttl_s: float = Field(300.0, gt=0, description="An entry lives this long from its last use.")
    ttl_1h_s: float = Field(3600.0, gt=0, description="Explicit: breakpoints asking for 1 h.")
    bytes_per_token: float = Field(4.0, gt=0, le=64, description="Prompt bytes per token.")
    max_entries: int = Field(100_000, ge=1, description="Entries kept at most (LRU).")


@dataclass(frozen=True, slots=True)
class CachePiece:
    """One content block of a prompt, in the provider's order, and its breakpoint if any."""

    data: bytes
    breakpoint: bool = False
    long: bool = False
    """The breakpoint asks for the 1-hour retention."""


@dataclass(frozen=True, slots=True)
class CacheUse:
    """What one request read from and wrote to the cache, in tokens."""

    read: int = 0
    written: int = 0


@dataclass(frozen=True, slots=True)
class _Mark:
    key: bytes
    tokens: int
    breakpoint: bool
    long: bool


class ProviderPromptCache:
    """The cache of one emulated provider (all its models: keys start from the model)."""

    def __init__(
        self, options: PromptCacheOptions, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.options = options
        self._clock = clock
        self._expiry: OrderedDict[bytes, tuple[float, float]] = OrderedDict()
        """key -> (expiry time, ttl), least recently used first."""

    def __len__(self) -> int:
        return len(self._expiry)

    def use(self, model: str, pieces: Sequence[CachePiece], prompt_tokens: int) -> CacheUse:
        """Read the longest cached prefix of this prompt, write what it asks to be written."""
        if self.options.semantics == "automatic":
            marks = self._steps(model, b"".join(piece.data for piece in pieces))
            readable = marks
        else:
            marks = self._blocks(model, pieces)
            readable = _near_breakpoints(marks)
        read = self._read(readable)
        written = self._write(marks, read)
        read = min(read, prompt_tokens)
        return CacheUse(read, min(written, prompt_tokens - read))

    def _read(self, marks: Sequence[_Mark]) -> int:
        now = self._clock()
        for mark in sorted(marks, key=lambda m: m.tokens, reverse=True):
            found = self._expiry.get(mark.key)
            if found is None or mark.tokens < self.options.min_prefix_tokens:
                continue
            expiry, ttl = found
            if expiry <= now:
                del self._expiry[mark.key]
                continue
            self._touch(mark.key, now + ttl, ttl)
            return mark.tokens
        return 0

    def _write(self, marks: Sequence[_Mark], read: int) -> int:
        """Store every breakpoint's prefix; the tokens written past what was read."""
        now = self._clock()
        options = self.options
        furthest = read
        for mark in marks:
            if not mark.breakpoint or mark.tokens < options.min_prefix_tokens:
                continue
            ttl = options.ttl_1h_s if mark.long else options.ttl_s
            self._touch(mark.key, now + ttl, ttl)
            furthest = max(furthest, mark.tokens)
        if options.semantics == "automatic":
            return 0  # automatic caching bills no writes
        return furthest - read

    def _touch(self, key: bytes, expiry: float, ttl: float) -> None:
        self._expiry[key] = (expiry, ttl)
        self._expiry.move_to_end(key)
        while len(self._expiry) > self.options.max_entries:
            self._expiry.popitem(last=False)

    def _steps(self, model: str, text: bytes) -> list[_Mark]:
        """Automatic: a mark at the minimum and at every increment after it."""
        options = self.options
        total = math.floor(len(text) / options.bytes_per_token)
        marks: list[_Mark] = []
        key, done = _root(model), 0
        for tokens in range(options.min_prefix_tokens, total + 1, options.increment_tokens):
            end = math.floor(tokens * options.bytes_per_token)
            key = _chain(key, text[done:end])
            done = end
            marks.append(_Mark(key, tokens, True, False))
        return marks

    def _blocks(self, model: str, pieces: Sequence[CachePiece]) -> list[_Mark]:
        """Explicit: a mark at the end of every content block."""
        marks: list[_Mark] = []
        key, size = _root(model), 0
        for piece in pieces:
            key = _chain(key, piece.data)
            size += len(piece.data)
            tokens = math.floor(size / self.options.bytes_per_token)
            marks.append(_Mark(key, tokens, piece.breakpoint, piece.long))
        return marks


def _near_breakpoints(marks: Sequence[_Mark]) -> list[_Mark]:
    """The block boundaries a read may end at: each breakpoint and the blocks before it."""
    near: dict[int, _Mark] = {}
    for index, mark in enumerate(marks):
        if mark.breakpoint:
            for i in range(max(0, index - LOOKBACK_BLOCKS), index + 1):
                near[i] = marks[i]
    return list(near.values())


def _root(model: str) -> bytes:
    return hashlib.blake2b(model.encode(), digest_size=_KEY_BYTES).digest()


def _chain(previous: bytes, data: bytes) -> bytes:
    return hashlib.blake2b(previous + data, digest_size=_KEY_BYTES).digest()

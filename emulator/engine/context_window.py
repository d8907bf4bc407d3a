"""The prompt as the engine sees it: rendered, and cut to its last N tokens if it truncates.

Engines that truncate from the left keep the end of a prompt (the question) and drop its
beginning. The emulator measures tokens as it always does (a fixed number of bytes per
token), so the kept tail is the last ``N * bytes_per_token`` bytes of the rendered prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from emulator.engine.prompt_blocks import render_chat, render_completion
from emulator.request_parsing import GenerationRequest


class VisiblePrompt:
    """One request's prompt after any truncation to ``keep_tokens``.

    Rendering is lazy: a linear engine that neither truncates nor looks for a needle
    never renders, which keeps the benchmark path as cheap as before.
    """

    def __init__(
        self,
        body: dict[str, Any],
        generation: GenerationRequest,
        *,
        chat: bool,
        keep_tokens: int | None,
        bytes_per_token: float,
    ) -> None:
        self.body = body
        self.generation = generation
        self.chat = chat
        self.keep_tokens = keep_tokens
        self._keep_bytes = (
            None if keep_tokens is None else math.floor(keep_tokens * bytes_per_token)
        )
        self._parts: list[bytes] | None = None
        self.rendered_bytes = 0

    def parts(self) -> list[bytes]:
        """The rendered prompt's kept parts, in order (the first may be cut)."""
        if self._parts is None:
            generation = self.generation
            full = render_chat(self.body) if self.chat else render_completion(generation.prompts)
            self.rendered_bytes = sum(map(len, full))
            if self._keep_bytes is None:
                self._parts = full
            elif self.chat:
                self._parts = keep_tail(full, self._keep_bytes)
            else:
                # Each prompt of a completion request is a sequence of its own.
                self._parts = [
                    tail for part in full for tail in keep_tail([part], self._keep_bytes)
                ]
        return self._parts

    def text(self) -> str:
        # A cut may split a character; the engine sees only whole ones.
        return b"".join(self.parts()).decode("utf-8", "ignore")

    def estimated_tokens(self) -> int:
        """The linear model's prompt tokens: each prompt's estimate, at most ``keep_tokens``."""
        counts = self.generation.prompt_tokens
        keep = self.keep_tokens
        return sum(counts) if keep is None else sum(min(count, keep) for count in counts)

    def estimate_truncated(self) -> bool:
        keep = self.keep_tokens
        return keep is not None and any(count > keep for count in self.generation.prompt_tokens)

    def render_truncated(self) -> bool:
        return sum(map(len, self.parts())) < self.rendered_bytes


def keep_tail(parts: Sequence[bytes], keep_bytes: int) -> list[bytes]:
    """The last ``keep_bytes`` of ``parts`` joined, still split where the parts were."""
    kept: list[bytes] = []
    budget = keep_bytes
    for part in reversed(parts):
        if budget <= 0:
            break
        kept.append(part[max(0, len(part) - budget) :])
        budget -= len(part)
    kept.reverse()
    return kept

"""How long an answer runs: an end-of-sequence draw, or exactly ``max_tokens`` when asked.

A real engine stops when it samples its end-of-sequence token, mostly well before the
request's ``max_tokens``. The emulator draws where that happens once per choice: a length
from a lognormal distribution with mean ``output_tokens_mean`` and log-spread
``output_tokens_sigma`` (median ``mean * exp(-sigma**2 / 2)``; answer lengths of chat
logs are skewed that way, many short answers and a long tail), at least 1 and at least the
request's ``min_tokens``. It is seeded like the answer's words (the request's ``seed`` or
its prompt, and the choice's index), so the same request gets the same length, and the
words of a shorter answer are the first words of a longer one. Below ``max_tokens`` the
answer ends there (``"stop"``); otherwise ``max_tokens`` cuts it (``"length"``).

``ignore_eos`` (a request's, vLLM's extension of OpenAI's API, or the engine's setting)
skips the draw: the answer is exactly ``max_tokens`` long, as benchmarks that need fixed
output lengths ask for it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

_LENGTH_SEED = 0x656F_735F_6472_6177  # "eos_draw": a stream apart from the words'


@dataclass(frozen=True, slots=True)
class AnswerLength:
    """How many tokens an answer has, and why it ended: ``"stop"`` or ``"length"``."""

    tokens: int
    finish_reason: str


@dataclass(frozen=True, slots=True)
class AnswerLengths:
    """The engine's end-of-sequence draw; ``ignore_eos`` makes every answer ``max_tokens``."""

    mean_tokens: float = 200.0
    sigma: float = 1.0
    ignore_eos: bool = False

    def draw(
        self, seed: int, max_tokens: int, *, min_tokens: int = 0, ignore_eos: bool = False
    ) -> AnswerLength:
        """The length of the answer seeded by ``seed`` under a cap of ``max_tokens``."""
        if self.ignore_eos or ignore_eos:
            return AnswerLength(max_tokens, "length")
        mu = math.log(self.mean_tokens) - self.sigma**2 / 2
        drawn = round(random.Random(seed ^ _LENGTH_SEED).lognormvariate(mu, self.sigma))
        tokens = max(1, min_tokens, drawn)
        if tokens < max_tokens:
            return AnswerLength(tokens, "stop")
        return AnswerLength(max_tokens, "length")

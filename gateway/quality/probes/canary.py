"""The logprob canary: fixed prompts, one output token, compared with a stored baseline.

At temperature 0 a model's first token and its top alternatives for a fixed prompt are a
fingerprint of the weights and how they are served: a quantised, swapped or misconfigured
model moves them. Drift is the total variation distance between the two top-k
distributions (tokens outside one's top-k count as probability 0 there). A backend that
returns no logprobs gets the token-only variant: the same first token or not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CANARY_PROMPTS: tuple[str, ...] = (
    "Complete the sequence with the next number only: 2, 4, 8, 16,",
    "Name the capital of France in one word.",
    "Continue the phrase with one word: The quick brown fox jumps over the lazy",
)
TOP_LOGPROBS = 5


@dataclass(frozen=True, slots=True)
class CanaryAnswer:
    """The first output token and, when the backend gives them, its top alternatives."""

    token: str
    top: Mapping[str, float] | None
    """Alternative token -> logprob, the chosen one included; None: no logprobs."""


def canary_body(model: str, prompt: str) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 1,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": TOP_LOGPROBS,
        "stream": False,
    }


def parse_canary(response: Any) -> CanaryAnswer | None:
    """The answer in a chat completion body; None when it has no first token at all."""
    try:
        choice = response["choices"][0]
    except (KeyError, IndexError, TypeError):
        return None
    content = (choice.get("logprobs") or {}).get("content") if isinstance(choice, dict) else None
    if isinstance(content, list) and content and isinstance(content[0], dict):
        first = content[0]
        top = {
            str(alt.get("token")): float(alt.get("logprob", -math.inf))
            for alt in first.get("top_logprobs") or []
            if isinstance(alt, dict)
        }
        token = str(first.get("token", ""))
        top.setdefault(token, float(first.get("logprob", -math.inf)))
        return CanaryAnswer(token, top)
    message = choice.get("message") if isinstance(choice, dict) else None
    text = message.get("content") if isinstance(message, dict) else None
    return CanaryAnswer(text, None) if isinstance(text, str) and text else None


def drift(answer: CanaryAnswer, baseline: CanaryAnswer) -> float:
    """0 (same) .. 1 (disjoint): total variation of top-k, or token equality without them."""
    if answer.top is None or baseline.top is None:
        return 0.0 if answer.token.strip() == baseline.token.strip() else 1.0
    p, q = _probabilities(answer.top), _probabilities(baseline.top)
    return 0.5 * sum(abs(p.get(t, 0.0) - q.get(t, 0.0)) for t in p.keys() | q.keys())


def _probabilities(top: Mapping[str, float]) -> dict[str, float]:
    """The top-k renormalised: what matters is how the model ranks its best candidates,
    and a flat distribution (small top probabilities) must not hide a wholesale change."""
    weights = {token: math.exp(logprob) for token, logprob in top.items() if logprob > -50}
    total = sum(weights.values())
    return {token: w / total for token, w in weights.items()} if total > 0 else {}


class CanaryBaselines:
    """Per model and prompt: the reference answer, and each backend's latest.

    The first answer seen becomes the reference. If it came from a backend that was
    already wrong, the others would all drift from it; so when a strict majority of the
    backends' latest answers (two of two, two of three, ...) agree among themselves and
    not with the reference, their answer becomes the reference. This also follows a
    legitimate model update once most backends serve it.
    """

    def __init__(self, threshold: float, max_entries: int = 1024) -> None:
        self._threshold = threshold
        self._max_entries = max_entries
        self._reference: dict[tuple[str, int], CanaryAnswer] = {}
        self._latest: dict[tuple[str, int], dict[str, CanaryAnswer]] = {}

    def judge(self, model: str, prompt: int, backend: str, answer: CanaryAnswer) -> float:
        """Record `answer` and return its drift from the (possibly updated) reference."""
        key = (model, prompt)
        if key not in self._reference:
            if len(self._reference) >= self._max_entries:
                return 0.0  # bounded: a new model beyond the cap is not judged
            self._reference[key] = answer
        latest = self._latest.setdefault(key, {})
        latest[backend] = answer
        self._rebase(key, latest)
        return drift(answer, self._reference[key])

    def reference(self, model: str, prompt: int) -> CanaryAnswer | None:
        return self._reference.get((model, prompt))

    def _rebase(self, key: tuple[str, int], latest: Mapping[str, CanaryAnswer]) -> None:
        answers = list(latest.values())
        if len(answers) < 2:
            return
        reference = self._reference[key]
        for candidate in answers:
            agreeing = [a for a in answers if drift(a, candidate) <= self._threshold]
            if 2 * len(agreeing) > len(answers) and drift(candidate, reference) > self._threshold:
                self._reference[key] = candidate
                return

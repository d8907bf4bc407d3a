"""Prefers the backends predicted to hold more of the prompt in their KV cache."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import ClassVar

from pydantic import Field

from policies.answers import Scores
from policies.base import PolicyParams, Role, Score
from policies.predict import cached_prompt_tokens_each, describe_cache
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@register_policy
class PrefixCacheScorer:
    """Scores the prefill tokens a cache hit saves: `1 - exp(-cached / scale_tokens)`.

    Tokens saved rather than the cached share of the prompt, because the share hides the
    work: 90% of a 100-token prompt saves nothing worth routing for, while 8,000 cached
    tokens of a long prompt save seconds. With the default scale, 2,048 cached tokens
    score 0.63 and 8,192 score 0.98; a 100-token hit stays near 0.
    """

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "prefix-cache-scorer"

    class Params(PolicyParams):
        scale_tokens: int = Field(2048, ge=1)
        """Cached tokens at which the score reaches 1 - 1/e ≈ 0.63."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        prompt, scale = snapshot.request.prompt_tokens, self.params.scale_tokens
        cached = cached_prompt_tokens_each(snapshot, candidates)
        values = [-math.expm1(-hit / scale) for hit in cached]
        return Scores(candidates, values, partial(_reason, prompt), cached)


def _reason(prompt: int, cached: int) -> str:
    return describe_cache(cached, prompt)

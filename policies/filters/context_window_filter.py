"""Drops backends whose context window cannot hold the prompt and the reply asked for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from pydantic import Field

from policies.answers import Verdicts
from policies.base import PolicyParams, Role, Verdict
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@register_policy
class ContextWindowFilter:
    """Keeps a backend when `prompt_tokens + max_tokens <= context_window_tokens`.

    Without `max_tokens`, a reserve of `default_reserve_tokens` stands in for the reply
    (an engine would otherwise generate until the window is full). Embeddings reserve
    nothing. A backend whose window is unknown is kept: the filter acts on what it knows.
    The prompt's size is the router's estimate (tiktoken's cl100k ratio), so a prompt
    near the window may still be refused by a backend that counts with another tokenizer.
    """

    role: ClassVar[Role] = "filter"
    type_name: ClassVar[str] = "context-window-filter"

    class Params(PolicyParams):
        default_reserve_tokens: int = Field(256, ge=0)
        """Tokens kept free for the reply when the request sets no `max_tokens`."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        request = snapshot.request
        prompt = request.prompt_tokens
        if request.endpoint == "embeddings":
            label, reply = "reserve", 0
        elif request.max_tokens is None:
            label, reply = "reserve", self.params.default_reserve_tokens
        else:
            label, reply = "max_tokens", request.max_tokens
        needed = prompt + reply
        windows = [b.context_window_tokens for b in candidates]
        keep = [window is None or needed <= window for window in windows]
        head = f"prompt {prompt:,} + {label} {reply:,}"
        return Verdicts(candidates, keep, _reason, [head] * len(candidates), keep, windows)


def _reason(head: str, kept: bool, window: int | None) -> str:
    if window is None:
        return "window unknown"
    return f"{head} {'<=' if kept else '>'} window {window:,}"

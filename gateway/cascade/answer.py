"""What an answer check reads: the request's expectations (`CheckRequest`) and a tier's
answer (`Answer`), both bounded, built once per attempt from the parsed body and the
quality signals' collected response."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.quality.signals.passive import declared_tools

if TYPE_CHECKING:
    from gateway.quality.signals.collect import CollectedResponse
    from gateway.quality.signals.observation import ToolCallSeen

MAX_TOOLS = 64
"""Declared tools a check reads; more are ignored (a request with more is unusual)."""


@dataclass(frozen=True, slots=True)
class CheckRequest:
    """What the client asked for that an answer can fail."""

    max_tokens: int | None = None
    """The client's own output cap (None: none asked)."""
    response_format: Mapping[str, Any] | None = None
    """`response_format` as the client sent it (`json_object`, `json_schema`, `text`)."""
    tools: Mapping[str, Any] | None = None
    """Declared tools: name → parameters schema (`{}` when none given)."""
    tool_choice: Any = None
    prompt_text: str = ""
    """The last user message's text, bounded: what a judge is shown of the request."""

    @property
    def tools_required(self) -> bool:
        choice = self.tool_choice
        forced = choice == "required" or (
            isinstance(choice, Mapping) and choice.get("type") == "function"
        )
        return bool(self.tools) and forced


@dataclass(frozen=True, slots=True)
class Answer:
    """One tier's answer (choice 0), as far as it was read."""

    text: str = ""
    text_cut: bool = False
    """The text was longer than the collector keeps; `text` is its start."""
    tool_calls: tuple[ToolCallSeen, ...] = ()
    finish_reason: str | None = None
    completion_tokens: int | None = None
    logprobs: tuple[float, ...] = ()
    """The answer's token log-probabilities, as far as the engine returned them."""
    complete: bool = True
    """The whole answer; False: the start a held stream had sent when its hold ended."""
    error: str | None = None
    """An error the backend answered with instead (an error body or event)."""


def check_request(body: Mapping[str, Any]) -> CheckRequest:
    """What the checks read of an OpenAI chat-completions request body."""
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    response_format = body.get("response_format")
    return CheckRequest(
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        response_format=response_format if isinstance(response_format, Mapping) else None,
        tools=declared_tools(body.get("tools"), MAX_TOOLS),
        tool_choice=body.get("tool_choice"),
        prompt_text=_last_user_text(body.get("messages")),
    )


def answer_of(
    collected: CollectedResponse, logprobs: tuple[float, ...] = (), *, complete: bool = True
) -> Answer:
    return Answer(
        text=collected.content,
        text_cut=collected.content_cut or collected.capped,
        tool_calls=collected.tool_calls,
        finish_reason=collected.finish_reason,
        completion_tokens=collected.completion_tokens,
        logprobs=logprobs,
        complete=complete,
        error=collected.error or collected.malformed,
    )


_PROMPT_CHARS = 4000


def _last_user_text(messages: object) -> str:
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content[-_PROMPT_CHARS:]
            if isinstance(content, list):
                parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
                return " ".join(p for p in parts if isinstance(p, str))[-_PROMPT_CHARS:]
    return ""

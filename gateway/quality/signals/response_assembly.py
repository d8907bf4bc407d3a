"""Assembles choice 0 of a response from parsed stream chunks or a whole body, within bounds.

Private to `collect.py`: it is the mutable state of one parse, frozen into a
`CollectedResponse` at the end. Real servers differ in small ways, all tolerated here:
tool call fragments without `index` (a fragment with a new `id` starts a call), several
calls sent under one index with different ids, arguments sent as an object rather than a
string, content as a list of text parts, reasoning as `reasoning_content` or `reasoning`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.quality.signals.observation import ToolCallSeen

Payload = dict[str, Any]
_MAX_PROBLEM_CHARS = 240


def parse_json(data: bytes) -> tuple[Payload | None, str]:
    """A JSON object, or None and why not (orjson's message)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return None, str(exc)
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    return value, ""


class BoundedText:
    """Concatenated text up to a number of characters; remembers whether more came."""

    __slots__ = ("_limit", "_parts", "_size", "cut")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[str] = []
        self._size = 0
        self.cut = False

    def append(self, text: str) -> None:
        if not text or self.cut:
            return
        room = self._limit - self._size
        if len(text) > room:
            text, self.cut = text[:room], True
        self._parts.append(text)
        self._size += len(text)

    def text(self) -> str:
        return "".join(self._parts)


@dataclass(slots=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None


class _CallParts:
    __slots__ = ("arguments", "id", "name")

    def __init__(self, call_id: str, max_argument_chars: int) -> None:
        self.id = call_id
        self.name = ""
        self.arguments = BoundedText(max_argument_chars)


class Assembly:
    """Choice 0 of one response, built up from chunks (`add_chunk`) or a body (`add_body`)."""

    def __init__(self, max_content_chars: int, max_tool_calls: int, max_argument_chars: int):
        self.content = BoundedText(max_content_chars)
        self.reasoning = BoundedText(max_content_chars)
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.done = False
        self.error: str | None = None
        self.malformed: str | None = None
        self.text_frozen = False
        """Set while reading a capped stream's tail: only terminal facts are taken."""
        self._max_calls = max_tool_calls
        self._max_argument_chars = max_argument_chars
        self._calls: list[_CallParts] = []
        self._by_index: dict[int, _CallParts] = {}
        self._calls_cut = False

    def report_malformed(self, problem: str) -> None:
        if self.malformed is None:
            self.malformed = problem[:_MAX_PROBLEM_CHARS]

    def add_chunk(self, payload: Payload, *, is_error_event: bool = False) -> None:
        """One `chat.completion.chunk` or `text_completion` stream event."""
        if not is_error_event and self._took_plain_delta(payload):
            return
        if self._took_error(payload, is_error_event):
            return
        self._take_usage(payload.get("usage"))
        for choice in _first_choices(payload):
            self._take_finish(choice)
            if self.text_frozen:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._take_message(delta, whole_calls=False)
            self._take_text(choice.get("text"))

    def _took_plain_delta(self, payload: Payload) -> bool:
        """Most chunks of a chat stream are one choice whose delta is a piece of content
        and nothing else: taken here in a few lookups; False for anything else."""
        content = plain_content(payload)
        if content is None:
            return False
        if not self.text_frozen:
            self.content.append(content)
        return True

    def add_body(self, payload: Payload) -> None:
        """A whole `chat.completion` or `text_completion` body."""
        if self._took_error(payload, is_error_event=False):
            return
        self._take_usage(payload.get("usage"))
        for choice in _first_choices(payload)[:1]:
            self._take_finish(choice)
            message = choice.get("message")
            if isinstance(message, dict):
                self._take_message(message, whole_calls=True)
            self._take_text(choice.get("text"))

    def tool_calls(self) -> tuple[tuple[ToolCallSeen, ...], bool]:
        """The calls in order of first appearance, and whether calls were dropped."""
        calls = tuple(
            ToolCallSeen(call.name, call.arguments.text(), arguments_cut=call.arguments.cut)
            for call in self._calls
        )
        return calls, self._calls_cut

    def _took_error(self, payload: Payload, is_error_event: bool) -> bool:
        error = payload.get("error")
        if error is None and is_error_event:
            error = payload
        if not error:
            return False
        if self.error is None:
            self.error = _error_message(error)[:_MAX_PROBLEM_CHARS]
        return True

    def _take_usage(self, usage: Any) -> None:
        # Some servers repeat usage on every chunk; the last one is the final count.
        if not isinstance(usage, dict):
            return
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        self.usage = Usage(
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            cached_tokens=_count(
                cached if cached is not None else usage.get("prompt_cache_hit_tokens")
            ),
        )

    def _take_finish(self, choice: Payload) -> None:
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self.finish_reason = reason

    def _take_text(self, text: Any) -> None:
        if isinstance(text, str):
            self.content.append(text)

    def _take_message(self, message: Payload, *, whole_calls: bool) -> None:
        self.content.append(text_of(message.get("content")))
        reasoning = message.get("reasoning_content")
        if not isinstance(reasoning, str):
            reasoning = message.get("reasoning")
        if isinstance(reasoning, str):
            self.reasoning.append(reasoning)
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            for fragment in calls:
                if isinstance(fragment, dict):
                    self._add_call_fragment(fragment, new_call=whole_calls)

    def _add_call_fragment(self, fragment: Payload, *, new_call: bool) -> None:
        raw_id = fragment.get("id")
        call_id = raw_id if isinstance(raw_id, str) else ""
        index = fragment.get("index")
        call = self._call_for(index if isinstance(index, int) else None, call_id, new_call)
        if call is None:
            return
        function = fragment.get("function")
        if not isinstance(function, dict):
            return
        name = function.get("name")
        if isinstance(name, str) and name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, dict | list):
            arguments = orjson.dumps(arguments).decode()
        if isinstance(arguments, str):
            call.arguments.append(arguments)

    def _call_for(self, index: int | None, call_id: str, new_call: bool) -> _CallParts | None:
        """The call a fragment continues, or a new one; None when over the bound."""
        if not new_call:
            latest = self._calls[-1] if self._calls else None
            known = self._by_index.get(index) if index is not None else latest
            if known is not None and (not call_id or not known.id or call_id == known.id):
                return known
        if len(self._calls) >= self._max_calls:
            self._calls_cut = True
            return None
        call = _CallParts(call_id, self._max_argument_chars)
        self._calls.append(call)
        if index is not None:
            self._by_index[index] = call
        return call


def plain_content(payload: Payload) -> str | None:
    """The content of a chunk that is one choice whose delta is a piece of content and
    nothing else (a role besides, at most); None for any other chunk."""
    if payload.get("usage") is not None or "error" in payload:
        return None
    choices = payload.get("choices")
    if type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("index", 0) not in (0, None):
        return None
    delta = choice.get("delta")
    if type(delta) is not dict or choice.get("finish_reason") is not None:
        return None
    content = delta.get("content")
    if type(content) is not str or len(delta) > 2 or (len(delta) == 2 and "role" not in delta):
        return None
    return content


def _first_choices(payload: Payload) -> list[Payload]:
    choices = payload.get("choices")
    if not isinstance(choices, list):
        return []
    return [c for c in choices if isinstance(c, dict) and c.get("index", 0) in (0, None)]


def text_of(content: Any, separator: str = "") -> str:
    """A message's `content` as text: a string, or its parts' texts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = (p.get("text") for p in content if isinstance(p, dict))
        return separator.join(p for p in parts if isinstance(p, str))
    return ""


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _error_message(error: Any) -> str:
    if isinstance(error, dict):
        message = error.get("message")
        kind = error.get("type") or error.get("code")
        text = message if isinstance(message, str) else orjson.dumps(error).decode()
        return f"{kind}: {text}" if isinstance(kind, str) and kind else text
    return str(error)

"""What each active probe sends and how its answer is judged; no I/O here.

- tool call: one forced call of a small function; the arguments must be a JSON object
  that matches the function's schema.
- needle: a fact stated at the very start of a long context, asked for at the end. A
  backend that silently drops the start of long prompts cannot answer; its reported
  `prompt_tokens` usually gives it away too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from gateway.quality.schema_check import schema_errors
from gateway.quality.signals import parse_arguments

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
        },
    },
}
_FILLER_TEXT = (
    "river stone signal engine router switch track train yard morning harbour valley "
    "lantern orchard market bridge meadow copper window garden letter island forest "
    "winter summer castle village station quiet bright early narrow golden silver"
)
_FILLER_WORDS = tuple(_FILLER_TEXT.split(" "))


def tool_call_body(model: str) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": "What is the weather in Paris, in celsius?"}],
        "tools": [WEATHER_TOOL],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "max_tokens": 64,
        "temperature": 0,
        "stream": False,
    }


def judge_tool_call(response: Any) -> str | None:
    """None when the forced call is well-formed; otherwise what is wrong, in words."""
    try:
        message = response["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return "no message in the response"
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(calls, list) or not calls:
        return "no tool call although one was forced"
    function = calls[0].get("function") if isinstance(calls[0], dict) else None
    if not isinstance(function, dict):
        return "tool call without a function"
    name = function.get("name")
    if name != "get_weather":
        return f"called unknown tool {name!r} (declared: get_weather)"
    # The passive tool-call signal's parser: probes and traffic judge arguments alike.
    arguments, not_json = parse_arguments(str(function.get("arguments", "")))
    if not_json is not None:
        return not_json
    problem = schema_errors(WEATHER_TOOL["function"]["parameters"], arguments)
    return f"arguments fail the schema: {problem}" if problem else None


@dataclass(frozen=True, slots=True)
class Needle:
    key: str
    value: str
    body: dict[str, Any]
    context_chars: int


def needle_probe(model: str, context_tokens: int, rng: random.Random) -> Needle:
    """A context of about `context_tokens` tokens with the fact in its first sentence."""
    key = f"k{rng.randrange(16**6):06x}"
    value = f"v{rng.randrange(16**8):08x}"
    fact = f'The secret value for key "{key}" is "{value}".'
    words: list[str] = []
    size, target = 0, context_tokens * 4  # ~4 characters per token of English
    while size < target:
        word = rng.choice(_FILLER_WORDS)
        words.append(word)
        size += len(word) + 1
    context = fact + " " + " ".join(words)
    question = f'Reply with the secret value for key "{key}". Answer with the value only.'
    body = {
        "model": model,
        "messages": [
            {"role": "system", "content": context},
            {"role": "user", "content": question},
        ],
        "max_tokens": 16,
        "temperature": 0,
        "stream": False,
    }
    return Needle(key, value, body, len(context))


def judge_needle(needle: Needle, response: Any) -> str | None:
    """None when the answer holds the value; otherwise what happened, in words."""
    try:
        choice = response["choices"][0]
        text = str(choice["message"].get("content") or "")
    except (KeyError, IndexError, TypeError, AttributeError):
        return "no message in the response"
    if needle.value in text:
        return None
    usage = response.get("usage") if isinstance(response, dict) else None
    reported = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    seen = f"; backend reported {reported:,} prompt tokens" if isinstance(reported, int) else ""
    return (
        f"fact at the start of a {needle.context_chars // 4:,}-token context not recalled "
        f"(answered {text[:40]!r}){seen}"
    )

"""What each active probe sends and how its answer is judged; no I/O here.

- tool call: one forced call of a small function; the arguments must be a JSON object
  that matches the function's schema.
- needle: a fact stated at the very start of a long context, asked for at the end. A
  backend that silently drops the start of long prompts cannot answer, and its reported
  `prompt_tokens` falls short of the context's words; one that refuses the context for
  its size (llama.cpp's `exceed_context_size_error`, OpenAI's `context_length_exceeded`)
  holds less than the probe asks of it. A small model can also miss a fact its backend
  did read whole: that answer is no evidence either way (measured on SmolLM2-135M, which
  recalls roughly half of such needles; docs/quality.md).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.quality.signals.rules import parse_arguments
from gateway.quality.signals.schema_check import schema_errors

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
NEEDLE_MAX_TOKENS = 32
"""Room for a model that repeats the question's sentence before the value (~20 tokens)."""
READ_WHOLE_SHARE = 0.9
"""A backend that reports at least this many prompt tokens per word of the needle's context
read it whole: every filler word is at least one token in the tokenizers of today's models."""
_CONTEXT_ERROR_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_CONTEXT_ERROR_WORDS = ("context length", "context size", "context window", "maximum context")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A probe's answer judged."""

    problem: str | None = None
    """What is wrong, in words; None: the answer is right."""
    evidence: bool = True
    """False: the answer proves nothing either way (recorded as no verdict, no evidence)."""
    drift: float | None = None
    """The canary's drift from its reference."""


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
    context_words: int


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
        "max_tokens": NEEDLE_MAX_TOKENS,
        "temperature": 0,
        "stream": False,
    }
    return Needle(key, value, body, len(context), len(words) + len(fact.split()))


def judge_needle(needle: Needle, response: Any) -> Verdict:
    """Right when the answer holds the value; wrong when it does not and the backend did
    not (say it) read the whole context; no evidence when it read it all yet the model
    missed the fact, which says how well the model recalls, not what the backend kept."""
    try:
        choice = response["choices"][0]
        text = str(choice["message"].get("content") or "")
    except (KeyError, IndexError, TypeError, AttributeError):
        return Verdict("no message in the response")
    if needle.value in text:
        return Verdict()
    usage = response.get("usage") if isinstance(response, dict) else None
    reported = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    size = f"a {needle.context_words:,}-word context"
    if isinstance(reported, int) and reported >= READ_WHOLE_SHARE * needle.context_words:
        detail = f"fact not recalled, but the backend read {size} whole ({reported:,} tokens)"
        return Verdict(detail, evidence=False)
    seen = f"; backend reported {reported:,} prompt tokens" if isinstance(reported, int) else ""
    return Verdict(f"fact at the start of {size} not recalled (answered {text[:40]!r}){seen}")


def context_refusal(status: int, body: bytes) -> str | None:
    """Why a 4xx answer refused the request for its context's size, or None if it did not.

    llama.cpp: `{"error": {"type": "exceed_context_size_error", "n_prompt_tokens": 1449,
    "n_ctx": 1024, ...}}`; OpenAI and vLLM: code `context_length_exceeded` or a message
    about the maximum context length.
    """
    if not 400 <= status < 500:
        return None
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    if not isinstance(error, dict):
        return None
    message = str(error.get("message") or "")
    named = {str(error.get("code")), str(error.get("type"))} & _CONTEXT_ERROR_CODES
    if not named and not any(word in message.lower() for word in _CONTEXT_ERROR_WORDS):
        return None
    asked, window = error.get("n_prompt_tokens"), error.get("n_ctx")
    if isinstance(asked, int) and isinstance(window, int):
        return f"refused a {asked:,}-token prompt: its context holds {window:,} tokens"
    return f"refused the prompt for its context size (HTTP {status})"

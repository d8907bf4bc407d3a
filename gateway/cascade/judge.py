"""The judge: a route asked whether a tier's answer is good enough, yes or no. The
question and the reading of its answer are here (pure); asking is the HTTP edge's.

P(yes) comes from the judge's first token's log-probabilities where the engine returns
them (the yes-like alternatives' share of yes- and no-like ones), else from its text
(yes 1, no 0); a judge that says neither is no evidence and the answer passes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gateway.cascade.verdict import Failure

if TYPE_CHECKING:
    from gateway.cascade.answer import Answer, CheckRequest
    from gateway.cascade.config import JudgeConfig

_SYSTEM = "You grade answers. Reply with one word: yes or no."
TOP_LOGPROBS = 5


def judge_body(
    config: JudgeConfig, route: str, request: CheckRequest, answer: Answer
) -> dict[str, Any]:
    """The chat request the judge route gets about `answer`."""
    shown = answer.text[: config.max_answer_chars]
    if answer.tool_calls:
        calls = "; ".join(f"{c.name}({c.arguments})" for c in answer.tool_calls)
        shown = f"{shown}\n[tool calls] {calls}"[: config.max_answer_chars]
    question = f"Request:\n{request.prompt_text}\n\nAnswer:\n{shown}\n\n{config.question}"
    return {
        "model": route,
        "messages": [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": question},
        ],
        "max_tokens": 1,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": TOP_LOGPROBS,
    }


def p_yes(document: Mapping[str, Any] | None) -> float | None:
    """The judge's probability of yes, or None when its answer says neither."""
    choice = _first_choice(document)
    if choice is None:
        return None
    from_logprobs = _from_logprobs(choice.get("logprobs"))
    if from_logprobs is not None:
        return from_logprobs
    message = choice.get("message")
    text = message.get("content") if isinstance(message, Mapping) else None
    return _word(text) if isinstance(text, str) else None


def judge_failure(config: JudgeConfig, p: float | None) -> Failure | None:
    if p is None or p >= config.min_yes:
        return None
    return Failure("judge", f"the judge said no (P(yes) {p:.2f} < {config.min_yes:g})")


def _first_choice(document: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    choices = document.get("choices") if document is not None else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None
    return choices[0]


def _from_logprobs(logprobs: object) -> float | None:
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], Mapping):
        return None
    first = content[0]
    alternatives = first.get("top_logprobs")
    options = alternatives if isinstance(alternatives, list) and alternatives else [first]
    yes = no = 0.0
    for option in options:
        if not isinstance(option, Mapping):
            continue
        word, value = option.get("token"), option.get("logprob")
        if not isinstance(word, str) or not isinstance(value, int | float):
            continue
        said = _word(word)
        if said == 1.0:
            yes += math.exp(value)
        elif said == 0.0:
            no += math.exp(value)
    return yes / (yes + no) if yes + no > 0 else None


def _word(text: str) -> float | None:
    said = text.strip().lower().lstrip("\"'*").split(maxsplit=1)
    first = said[0].rstrip(".,!\"'*") if said else ""
    if first in ("yes", "y"):
        return 1.0
    if first in ("no", "n"):
        return 0.0
    return None

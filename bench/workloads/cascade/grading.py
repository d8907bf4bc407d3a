"""The graders: is an answer right? One per kind of truth, with light normalisation.

- a JSON document (extraction): the answer parses as a JSON object (a Markdown code fence
  around it is allowed) and every field of the truth, nested ones too, is equal;
- a tool call: the first call names the tool and its arguments (a JSON text or an object)
  hold every argument of the truth, equal;
- a short answer: the first number (arithmetic) or code (look-up) in the text equals the
  truth.

Equal means after normalising: strings stripped, runs of spaces made one, case folded;
integers and floats compared as numbers (``3 == 3.0``); but no value changes type (``"3"``
is no ``3``, ``"yes"`` no ``true``): a program reading the answer would trip on it. Fields
or arguments beyond the truth's are not judged (the schema is the cascade's own check).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

Answer = str | Sequence[Mapping[str, Any]]
"""A text, or OpenAI's ``tool_calls`` (each with ``function.name`` and ``.arguments``)."""

_FENCE = re.compile(r"^\s*```[A-Za-z]*\s*\n?(?P<inner>.*?)\n?\s*```\s*$", re.DOTALL)
NUMBER = re.compile(r"-?\d+(?:,\d{3})*")
"""A number as an arithmetic answer writes it: digits, ``-`` first, maybe 1,234 commas."""
CODE = re.compile(r"(?<![A-Za-z0-9-])[A-Za-z]{2}-\d{4}(?![A-Za-z0-9-])")
"""A look-up's code (``QX-4821``), as ``short_questions.py`` draws them."""


def answer_of(response: Mapping[str, Any]) -> Answer:
    """The first choice's tool calls, if it made any, else its text ("" for none)."""
    message = response["choices"][0]["message"]
    calls = message.get("tool_calls")
    if calls:
        return list(calls)
    content = message.get("content")
    return content if isinstance(content, str) else ""


def grade_document(truth: Mapping[str, Any], answer: Answer) -> bool:
    """An extraction's answer: a JSON object whose fields equal the truth's."""
    if not isinstance(answer, str):
        return False
    fenced = _FENCE.match(answer)
    try:
        document = orjson.loads(fenced["inner"] if fenced else answer)
    except orjson.JSONDecodeError:
        return False
    return matches(truth, document)


def grade_call(truth: Mapping[str, Any], answer: Answer) -> bool:
    """A tool call's answer: the first call is to ``truth["name"]`` with its arguments."""
    if isinstance(answer, str) or not answer:
        return False
    function = answer[0].get("function")
    if not isinstance(function, Mapping) or function.get("name") != truth["name"]:
        return False
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return False
    return matches(truth["arguments"], arguments)


def grade_short(truth: str, answer: Answer) -> bool:
    """A short answer: its first number (or code, when the truth is one) is the truth."""
    if not isinstance(answer, str):
        return False
    token = (NUMBER if NUMBER.fullmatch(truth) else CODE).search(answer)
    if token is None:
        return False
    return normalised(token.group().replace(",", "")) == normalised(truth)


def matches(expected: object, got: object) -> bool:
    """``got`` holds ``expected``: every field of a mapping (recursively), else equal."""
    if isinstance(expected, Mapping):
        return isinstance(got, Mapping) and all(
            name in got and matches(value, got[name]) for name, value in expected.items()
        )
    return normalised(expected) == normalised(got)


def normalised(value: object) -> object:
    """A value as graders compare it (see the module's docstring)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, list):
        return [normalised(item) for item in value]
    return value

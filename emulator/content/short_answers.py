"""Short questions with one checkable answer, as the oracle reads them and benchmarks ask them.

Two kinds, each one pattern (the phrasing functions below write exactly what the patterns
read, so a workload that uses them is answerable by construction):

- arithmetic: ``What is 37 + 48?`` — two integers and one of ``+``, ``-``, ``*``; the
  answer is the result in decimal digits, ``-`` first when negative;
- look-up in the prompt: facts ``The code for NAME is CODE.`` anywhere in the prompt and
  the question ``What is the code for NAME?``; the answer is CODE (the last fact for NAME
  wins; names compare without regard to case or runs of spaces), or ``I do not know.``
  when no fact names it. A NAME holds no full stop, question mark or line break; a CODE
  is letters, digits and ``-``.

The question is read from the last user message, the facts from the whole prompt.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

from emulator.content.needle import NOT_FOUND

Operator = Callable[[int, int], int]
OPERATORS: dict[str, Operator] = {"+": operator.add, "-": operator.sub, "*": operator.mul}
_ARITHMETIC = re.compile(r"\bWhat is (-?\d+) ?([-+*]) ?(-?\d+)\?", re.IGNORECASE)
_LOOKUP = re.compile(r"\bWhat is the code for ([^.?\n]+?)\?", re.IGNORECASE)
_FACT = re.compile(r"\bThe code for ([^.?\n]+?) is ([A-Za-z0-9-]+)\.", re.IGNORECASE)


def arithmetic_question(left: int, symbol: str, right: int) -> str:
    """``What is 37 + 48?``; ``symbol`` is one of ``OPERATORS``."""
    if symbol not in OPERATORS:
        raise ValueError(f"no operator {symbol!r}; one of {', '.join(OPERATORS)}")
    return f"What is {left} {symbol} {right}?"


def arithmetic_answer(left: int, symbol: str, right: int) -> str:
    return str(OPERATORS[symbol](left, right))


def code_fact(name: str, code: str) -> str:
    """``The code for NAME is CODE.``"""
    return f"The code for {name} is {code}."


def code_question(name: str) -> str:
    """``What is the code for NAME?``"""
    return f"What is the code for {name}?"


def short_answer(question: str, prompt: str) -> str | None:
    """The answer to the look-up or arithmetic question in ``question`` (a look-up answered
    from ``prompt``), or None when it asks neither."""
    lookup = _LOOKUP.search(question)
    if lookup is not None:
        return _code_for(lookup.group(1), prompt)
    sum_ = _ARITHMETIC.search(question)
    if sum_ is not None:
        return arithmetic_answer(int(sum_.group(1)), sum_.group(2), int(sum_.group(3)))
    return None


def _code_for(name: str, prompt: str) -> str:
    wanted = _same_name(name)
    codes = [code for named, code in _FACT.findall(prompt) if _same_name(named) == wanted]
    return str(codes[-1]) if codes else NOT_FOUND


def _same_name(name: str) -> str:
    return " ".join(name.split()).casefold()

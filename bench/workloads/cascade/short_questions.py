"""``short`` requests: arithmetic, or a code looked up in a list of facts; answer only that.

Half are arithmetic: ``What is 37 + 48? Answer with the number only.``, each operand of two
or three digits, ``+``, ``-`` or ``*`` (results from -989 to 998,001). Half are look-ups:
5-20 facts ``The code for NAME is CODE.`` (names from a list of two-word places, codes two
capitals, ``-`` and four digits, all distinct), then ``What is the code for NAME? Answer
with the code only.`` about one of them. The phrasing is the emulator's
(``emulator/content/short_answers.py``), which its oracle answers. Truth: the answer text.
"""

from __future__ import annotations

import random
import string
from typing import Any

from bench.workloads.cascade.records import CascadeRequest
from emulator.content.short_answers import (
    OPERATORS,
    arithmetic_answer,
    arithmetic_question,
    code_fact,
    code_question,
)

MAX_TOKENS = 16
FACTS = (5, 20)
_ADJECTIVES = """
    amber blue cedar copper coral crimson dusty golden granite green hidden hollow iron
    ivory jade lunar maple misty north oak olive pale quiet red silver stone sunny upper
""".split()  # noqa: SIM905 - a word list reads better as prose
_PLACES = """
    bay bridge cove creek field forge gate grove harbor hill lake lane mill orchard pass
    peak point ridge river square tower vale wharf yard
""".split()  # noqa: SIM905 - a word list reads better as prose


def request(rng: random.Random, request_id: str, model: str) -> CascadeRequest:
    """An arithmetic or a look-up question, even odds."""
    if rng.random() < 0.5:
        task, text, truth = "arithmetic", *_arithmetic(rng)
    else:
        task, text, truth = "lookup", *_lookup(rng)
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": text}],
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
    }
    return CascadeRequest(request_id, "short", task, body, truth)


def _arithmetic(rng: random.Random) -> tuple[str, str]:
    left, right = _operand(rng), _operand(rng)
    symbol = rng.choice(list(OPERATORS))
    question = arithmetic_question(left, symbol, right)
    return f"{question} Answer with the number only.", arithmetic_answer(left, symbol, right)


def _operand(rng: random.Random) -> int:
    return rng.randint(10, 99) if rng.random() < 0.5 else rng.randint(100, 999)


def _lookup(rng: random.Random) -> tuple[str, str]:
    count = rng.randint(*FACTS)
    names = rng.sample([f"{a.title()} {p.title()}" for a in _ADJECTIVES for p in _PLACES], count)
    codes: set[str] = set()
    while len(codes) < count:
        letters = "".join(rng.choices(string.ascii_uppercase, k=2))
        codes.add(f"{letters}-{rng.randint(0, 9999):04d}")
    facts = dict(zip(names, sorted(codes), strict=True))
    rng.shuffle(names)
    asked = rng.choice(names)
    lines = "\n".join(code_fact(name, facts[name]) for name in names)
    question = f"{code_question(asked)} Answer with the code only."
    return f"Here are the access codes for our sites.\n{lines}\n\n{question}", facts[asked]

"""Short questions the oracle answers: arithmetic and codes looked up in the prompt."""

from __future__ import annotations

import pytest

from emulator.content.needle import NOT_FOUND
from emulator.content.short_answers import (
    arithmetic_answer,
    arithmetic_question,
    code_fact,
    code_question,
    short_answer,
)

FACTS = "\n".join(
    [code_fact("Maple", "QX-4821"), code_fact("Blue Harbor", "AB-0012"), code_fact("Oak", "ZZ-1")]
)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What is 37 + 48?", "85"),
        ("What is 37 - 48? Answer with the number only.", "-11"),
        ("Quick one. what is 123*456?", "56088"),
        ("What is 12 / 3?", None),
        ("What is -5 + 2?", "-3"),
        ("What is the code for Maple? Answer with the code only.", "QX-4821"),
        ("What is the code for blue  harbor?", "AB-0012"),
        ("What is the code for Pine?", NOT_FOUND),
        ("What is the capital of France?", None),
        ("Tell me about 37 + 48.", None),
    ],
)
def test_short_answer(question: str, answer: str | None) -> None:
    assert short_answer(question, FACTS) == answer


def test_the_last_fact_for_a_name_wins() -> None:
    prompt = f"{code_fact('Maple', 'AA-1')} {code_fact('maple', 'BB-2')}"
    assert short_answer(code_question("Maple"), prompt) == "BB-2"


@pytest.mark.parametrize("symbol", ["+", "-", "*"])
def test_the_phrasing_is_what_the_oracle_reads(symbol: str) -> None:
    question = arithmetic_question(417, symbol, 38)
    assert short_answer(question, "") == arithmetic_answer(417, symbol, 38)


def test_an_unknown_operator_is_refused() -> None:
    with pytest.raises(ValueError, match="no operator"):
        arithmetic_question(1, "/", 2)

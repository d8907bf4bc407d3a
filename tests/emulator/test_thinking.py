"""Thinking before the answer: its own words, decoded first, counted in completion tokens."""

from __future__ import annotations

from dataclasses import replace

from emulator.content.answer_length import AnswerLengths
from emulator.content.generation import AnswerStyle, generate_choices
from emulator.wire.openai_request import parse_chat
from tests.emulator.conftest import chat_request
from tests.emulator.test_chat import WEATHER_TOOL

EXACT = AnswerLengths(ignore_eos=True)


def test_thinking_pieces_come_first_and_leave_the_answer_as_it_was() -> None:
    plain = parse_chat(chat_request(max_tokens=5, stop=["zzz"]))
    [answer] = generate_choices(plain, EXACT)
    [thought] = generate_choices(replace(plain, thinking_tokens=3), EXACT)
    assert thought.thinking_pieces == 3 and len(thought.thinking) == 3
    assert thought.answer == answer.pieces and thought.pieces[3:] == answer.pieces
    assert thought.thinking != answer.pieces[:3]  # words of their own
    assert thought.completion_tokens == 8 and thought.finish_reason == "length"
    substituted = generate_choices(
        replace(plain, thinking_tokens=3), EXACT, AnswerStyle(substitute=True)
    )
    assert substituted[0].thinking != thought.thinking


def test_a_tool_call_can_be_thought_about_first() -> None:
    request = replace(
        parse_chat(chat_request(tools=[WEATHER_TOOL], max_tokens=1)), thinking_tokens=2
    )
    [choice] = generate_choices(request, AnswerLengths())
    assert choice.tool_call is not None and choice.thinking_pieces == 2
    assert choice.finish_reason == "tool_calls"
    assert choice.completion_tokens == 2 + len(choice.answer)


def test_a_stop_string_is_named() -> None:
    [full] = generate_choices(parse_chat(chat_request(max_tokens=10)), EXACT)
    stop = full.pieces[4].strip()
    [stopped] = generate_choices(parse_chat(chat_request(max_tokens=10, stop=["zzz", stop])), EXACT)
    assert (stopped.finish_reason, stopped.stop_sequence) == ("stop", stop)
    assert full.stop_sequence is None

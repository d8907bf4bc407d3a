"""providers.usage reads what the translated usage carries: cache reads, cache writes,
reasoning; and usage shaped as before still parses the same."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.anthropic.messages_wire import MessagesUsage
from providers.anthropic.response_translation import openai_usage
from providers.usage import Usage, usage_from_body, usage_of


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"prompt_tokens": 10, "completion_tokens": 2},
            Usage(10, 2, None),
        ),
        (
            {
                "prompt_tokens": 10,
                "completion_tokens": 2,
                "prompt_tokens_details": {"cached_tokens": 4},
            },
            Usage(10, 2, 4, cache_write_tokens=None, reasoning_tokens=None),
        ),
        (
            {
                "prompt_tokens": 10,
                "completion_tokens": 50,
                "prompt_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 6},
                "completion_tokens_details": {"reasoning_tokens": 32},
            },
            Usage(10, 50, 4, cache_write_tokens=6, reasoning_tokens=32),
        ),
        (
            {
                "prompt_tokens": 1,
                "completion_tokens": 1,
                "prompt_tokens_details": None,
                "completion_tokens_details": {"reasoning_tokens": "many"},
            },
            Usage(1, 1, None),
        ),
    ],
)
def test_the_openai_parser(usage: dict[str, Any], expected: Usage) -> None:
    assert usage_of({"usage": usage}) == expected


def test_the_defaults_leave_existing_callers_unchanged() -> None:
    usage = Usage(prompt_tokens=3, completion_tokens=4, cached_tokens=None)
    assert (usage.cache_write_tokens, usage.reasoning_tokens) == (None, None)


def test_anthropic_counts_survive_the_round_trip() -> None:
    anthropic = MessagesUsage(
        input_tokens=5,
        output_tokens=9,
        cache_read_input_tokens=800,
        cache_creation_input_tokens=120,
    )
    body = orjson.dumps({"object": "chat.completion", "usage": openai_usage(anthropic)})
    assert usage_from_body(body) == Usage(
        prompt_tokens=925, completion_tokens=9, cached_tokens=800, cache_write_tokens=120
    )

"""Usage as each OpenAI-compatible service reports it, normalised; Anthropic's and Gemini's
translated usage is tested beside their adapters."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.usage import Usage, UsageTap, usage_from_body, usage_of


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"prompt_tokens": 100, "completion_tokens": 5},
            Usage(100, 5, None),
        ),
        (
            {
                "prompt_tokens": 100,
                "completion_tokens": 40,
                "prompt_tokens_details": {"cached_tokens": 64},
                "completion_tokens_details": {"reasoning_tokens": 30},
            },
            Usage(100, 40, 64, reasoning_tokens=30),
        ),
        (
            # DeepSeek: hits and misses at the top, adding up to prompt_tokens.
            {
                "prompt_tokens": 100,
                "completion_tokens": 40,
                "prompt_cache_hit_tokens": 64,
                "prompt_cache_miss_tokens": 36,
                "completion_tokens_details": {"reasoning_tokens": 30},
            },
            Usage(100, 40, 64, reasoning_tokens=30),
        ),
        (
            # Both names: OpenAI's wins (they agree when DeepSeek sends both).
            {
                "prompt_tokens": 100,
                "completion_tokens": 1,
                "prompt_cache_hit_tokens": 60,
                "prompt_tokens_details": {"cached_tokens": 64},
            },
            Usage(100, 1, 64),
        ),
        (
            {"prompt_tokens": 100, "completion_tokens": 1, "prompt_tokens_details": None},
            Usage(100, 1, None),
        ),
        (
            {"prompt_tokens": 100, "completion_tokens": 1, "prompt_cache_hit_tokens": "64"},
            Usage(100, 1, None),
        ),
    ],
    ids=["plain", "openai", "deepseek", "both", "null-details", "hit-not-a-number"],
)
def test_usage_of(usage: dict[str, Any], expected: Usage) -> None:
    assert usage_of({"usage": usage}) == expected


def test_deepseeks_cache_hits_are_read_from_a_streams_usage_event() -> None:
    usage = {"prompt_tokens": 20, "completion_tokens": 2, "prompt_cache_hit_tokens": 16}
    event = b"data: " + orjson.dumps({"choices": [], "usage": usage}) + b"\n\n"
    tap = UsageTap()
    for chunk in (b'data: {"choices": [], "usage": null}\n\n', event, b"data: [DONE]\n\n"):
        tap.feed(chunk)
    assert tap.usage() == Usage(20, 2, 16)
    assert usage_from_body(orjson.dumps({"usage": usage})) == Usage(20, 2, 16)

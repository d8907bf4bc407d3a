"""Usage as each OpenAI-compatible service reports it, normalised; Anthropic's and Gemini's
translated usage is tested beside their adapters."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.usage import Usage, UsageTap, usage_from_body, usage_of
from tests import llama_server_replies as replies


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
        (
            # A backend's odd counts read as 0, never an exception on the way back.
            {"prompt_tokens": "n/a", "completion_tokens": [1]},
            Usage(0, 0, None),
        ),
        (
            {"prompt_tokens": -3, "completion_tokens": True},
            Usage(0, 0, None),
        ),
        (
            {"prompt_tokens": 12.0, "completion_tokens": 2.5},
            Usage(12, 0, None),
        ),
    ],
    ids=[
        "plain",
        "openai",
        "deepseek",
        "both",
        "null-details",
        "hit-not-a-number",
        "counts-not-numbers",
        "negative-and-bool",
        "floats",
    ],
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


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
def test_a_streams_usage_event_is_read_whatever_its_line_ends(newline: bytes) -> None:
    usage = {"prompt_tokens": 20, "completion_tokens": 2, "prompt_cache_hit_tokens": 16}
    tap = UsageTap()
    tap.feed(b"data: " + orjson.dumps({"choices": [], "usage": usage}) + newline * 2)
    tap.feed(b"data: [DONE]" + newline * 2)
    assert tap.usage() == Usage(20, 2, 16)


# -- llama.cpp's llama-server: the engine's own counts and times beside `usage`


def test_llama_servers_answer_is_read_with_its_timings() -> None:
    assert usage_from_body(replies.CHAT_COLD) == Usage(
        41, 16, 0, prefill_ms=284.952, decode_ms=320.366
    )
    assert usage_from_body(replies.CHAT_WARM) == Usage(
        41, 16, 40, prefill_ms=21.22, decode_ms=320.147
    )


def test_an_older_llama_server_without_details_gives_cache_n() -> None:
    document = orjson.loads(replies.CHAT_WARM)
    del document["usage"]["prompt_tokens_details"]
    assert usage_of(document) == Usage(41, 16, 40, prefill_ms=21.22, decode_ms=320.147)


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        # Without include_usage only the final chunk's timings say anything: 40 cached
        # plus 1 computed prompt tokens, 16 predicted.
        (replies.STREAM_TAIL, Usage(41, 16, 40, prefill_ms=20.929, decode_ms=335.138)),
        (replies.STREAM_USAGE_TAIL, Usage(41, 16, 40, prefill_ms=20.731, decode_ms=318.226)),
    ],
    ids=["timings-only", "include-usage"],
)
def test_a_llama_server_stream_is_read_from_its_last_events(tail: bytes, expected: Usage) -> None:
    events = [event + b"\n\n" for event in tail.split(b"\n\n") if event]
    whole, pieces = UsageTap(), UsageTap()  # one read, or one read per event
    whole.feed(b"".join(events))
    for event in events:
        pieces.feed(event)
    assert whole.usage() == pieces.usage() == expected
    assert usage_from_body(tail.split(b"data: ")[-2].strip()) == expected


def test_timings_on_every_chunk_keep_the_tail_short_and_read_the_last() -> None:
    def chunk(n: int) -> bytes:
        timings = {"cache_n": 0, "prompt_n": 5, "prompt_ms": 1.0, "predicted_n": n}
        return b"data: " + orjson.dumps({"choices": [], "timings": timings}) + b"\n\n"

    tap = UsageTap()
    for n in range(1, 2_000):
        tap.feed(chunk(n))
    tap.feed(b"data: [DONE]\n\n")
    assert tap.usage() == Usage(5, 1_999, 0, prefill_ms=1.0)


@pytest.mark.parametrize(
    "timings",
    [
        {"cache_n": 3},
        {"prompt_n": 1, "predicted_n": "16"},
        {"prompt_n": 1, "predicted_n": 2, "prompt_ms": -1, "predicted_ms": True},
    ],
    ids=["no-counts", "count-not-a-number", "bad-times"],
)
def test_incomplete_timings_give_what_they_can(timings: dict[str, Any]) -> None:
    usage = usage_of({"timings": timings})
    if "predicted_n" not in timings or not isinstance(timings["predicted_n"], int):
        assert usage is None
    else:
        assert usage == Usage(1, 2, None)

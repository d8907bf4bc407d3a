"""Prompt rendering and chained block ids: shared prefixes, model salt, tools, reuse."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.engine.prompt_blocks import PromptHasher, render_chat, render_completion

MODEL = "m"
SYSTEM = {"role": "system", "content": "You are a careful assistant. " * 40}
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def _turns(count: int) -> list[list[dict[str, Any]]]:
    """The message lists a conversation sends, one per turn."""
    messages: list[dict[str, Any]] = [SYSTEM]
    turns = []
    for turn in range(count):
        messages = [*messages, {"role": "user", "content": f"question {turn} " * 30}]
        turns.append(messages)
        messages = [*messages, {"role": "assistant", "content": f"answer {turn} " * 50}]
    return turns


def _ids(hasher: PromptHasher, body: dict[str, Any], model: str = MODEL) -> tuple[bytes, ...]:
    return hasher.blocks(model, render_chat(body)).block_ids


def test_next_turn_shares_every_full_block_of_the_previous_prompt() -> None:
    hasher = PromptHasher()
    previous: tuple[bytes, ...] = ()
    for messages in _turns(5):
        ids = _ids(hasher, {"messages": messages})
        assert len(ids) > len(previous)
        assert ids[: len(previous)] == previous
        previous = ids


def test_reused_ids_equal_ids_hashed_from_scratch() -> None:
    remembering = PromptHasher()
    for messages in _turns(6):
        reused = _ids(remembering, {"messages": messages})
        assert reused == _ids(PromptHasher(), {"messages": messages})


def test_model_salt_changes_every_id() -> None:
    hasher = PromptHasher()
    body = {"messages": _turns(1)[0]}
    first, second = _ids(hasher, body, "model-a"), _ids(hasher, body, "model-b")
    assert len(first) == len(second) > 0
    assert not set(first) & set(second)


def test_tools_change_the_ids() -> None:
    hasher = PromptHasher()
    messages = _turns(1)[0]
    plain = _ids(hasher, {"messages": messages})
    with_tools = _ids(hasher, {"messages": messages, "tools": TOOLS})
    assert plain[0] != with_tools[0]
    # Tool JSON is canonical: key order in the request does not matter.
    reordered = [
        {"function": {"parameters": {"type": "object"}, "name": "lookup"}, "type": "function"}
    ]
    assert _ids(hasher, {"messages": messages, "tools": reordered}) == with_tools


@pytest.mark.parametrize(
    ("length", "tokens", "blocks"),
    [(1, 1, 0), (63, 16, 0), (64, 16, 1), (65, 17, 1), (1000, 250, 15)],
)
def test_token_estimate_and_partial_block(length: int, tokens: int, blocks: int) -> None:
    prompt = PromptHasher().blocks(MODEL, render_completion(["x" * length]))
    assert (prompt.tokens, len(prompt.block_ids)) == (tokens, blocks)


def test_text_parts_render_like_a_string() -> None:
    parts = [
        {"type": "text", "text": "hello "},
        {"type": "image_url"},
        {"type": "text", "text": "you"},
    ]
    as_parts = render_chat({"messages": [{"role": "user", "content": parts}]})
    as_string = render_chat({"messages": [{"role": "user", "content": "hello you"}]})
    assert as_parts == as_string


def test_block_size_follows_settings() -> None:
    hasher = PromptHasher(block_tokens=32, bytes_per_token=2.0)
    prompt = hasher.blocks(MODEL, [b"y" * 640])
    assert hasher.block_bytes == 64
    assert (prompt.tokens, len(prompt.block_ids)) == (320, 10)


def test_memo_is_bounded() -> None:
    hasher = PromptHasher(memo_entries=4)
    for index in range(20):
        hasher.blocks(MODEL, [f"prompt {index} ".encode() * 20])
    assert len(hasher._memo) == 4

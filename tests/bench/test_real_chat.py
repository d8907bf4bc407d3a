"""The real-engine chat generator: a valid trace, prompts within the model's bounds, chained
and interleaved conversations, the same trace for the same seed."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from bench.replay.trace import Trace, TraceRequest, load_trace
from bench.workloads import real_chat
from bench.workloads.builder import write_lines
from bench.workloads.real_chat import (
    TEMPLATE_TOKENS_PER_MESSAGE,
    TEMPLATE_TOKENS_PER_PROMPT,
    WORDS,
    RealChatShape,
    sentences,
    text_tokens,
)


def _trace(tmp_path: Path, shape: RealChatShape, name: str = "t") -> Trace:
    return load_trace(write_lines(tmp_path / f"{name}.jsonl", real_chat.lines(shape)))


def _prompt_tokens(trace: Trace, request: TraceRequest) -> int:
    content = sum(text_tokens(trace.message_text(m)) for m in request.messages)
    overhead = TEMPLATE_TOKENS_PER_MESSAGE * len(request.messages) + TEMPLATE_TOKENS_PER_PROMPT
    return content + overhead


@pytest.mark.parametrize("tokens", [1, 2, 7, 15, 150, 333])
def test_sentences_hold_exactly_the_tokens_asked_for(tokens: int) -> None:
    text = sentences(random.Random(tokens), tokens)
    assert text_tokens(text) == tokens
    assert text.startswith(" ") and ".." not in text and ". ." not in text
    assert set(text.replace(".", " ").split()) <= set(WORDS)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_trace_is_valid_and_prompts_fit_the_model(seed: int, tmp_path: Path) -> None:
    shape = RealChatShape(seed=seed)
    trace = _trace(tmp_path, shape)  # load_trace validates the format (FORMAT.md)
    assert trace.meta["name"] == f"real-chat-seed{seed}" and trace.meta["seed"] == seed
    assert trace.meta["requests"] == len(trace.requests) >= 30
    sizes = [_prompt_tokens(trace, r) for r in trace.requests]
    assert min(sizes) >= 200 and max(sizes) <= shape.max_prompt_tokens <= 800
    assert all(16 <= r.max_tokens <= 48 and r.stream for r in trace.requests)
    # One shared system prompt of about 150 tokens opens every prompt.
    assert {r.messages[0].segments for r in trace.requests} == {("real-sys",)}
    assert text_tokens(trace.texts["real-sys"]) == shape.system_tokens
    due = trace.nominal_start_s()
    assert [due[r.id] for r in trace.requests] == sorted(due.values())  # dispatch order


def test_turns_are_chained_and_grow_the_conversation(tmp_path: Path) -> None:
    shape = RealChatShape()
    trace = _trace(tmp_path, shape)
    by_id = {r.id: r for r in trace.requests}
    turns = Counter(r.session for r in trace.requests)
    assert len(turns) == shape.conversations
    assert min(turns.values()) >= 3 and max(turns.values()) <= shape.turns
    for request in trace.requests:
        if request.parent is None:
            assert request.start_s is not None and len(request.messages) == 2
            continue
        parent = by_id[request.parent]
        assert request.session == parent.session and request.after_s is not None
        assert request.messages[: len(parent.messages)] == parent.messages
        assert [m.role for m in request.messages[len(parent.messages) :]] == ["assistant", "user"]
        answer = request.messages[len(parent.messages)]
        assert text_tokens(trace.message_text(answer)) == parent.max_tokens


def test_conversations_are_interleaved(tmp_path: Path) -> None:
    trace = _trace(tmp_path, RealChatShape())
    due = trace.nominal_start_s()
    spans: dict[str | None, tuple[float, float]] = {}
    for request in trace.requests:
        low, high = spans.get(request.session, (due[request.id], due[request.id]))
        spans[request.session] = (min(low, due[request.id]), max(high, due[request.id]))
    # When the middle conversation starts, most of the others are under way.
    middle = sorted(spans.values())[len(spans) // 2][0]
    active = [s for s, (low, high) in spans.items() if low <= middle <= high]
    assert len(active) >= len(spans) // 2


def test_same_seed_same_trace_other_seed_other_trace(tmp_path: Path) -> None:
    one = write_lines(tmp_path / "a.jsonl", real_chat.lines(RealChatShape(seed=4)))
    again = write_lines(tmp_path / "b.jsonl", real_chat.lines(RealChatShape(seed=4)))
    other = write_lines(tmp_path / "c.jsonl", real_chat.lines(RealChatShape(seed=5)))
    assert one.read_bytes() == again.read_bytes() != other.read_bytes()


def test_command_line_writes_the_shape_asked_for(tmp_path: Path) -> None:
    out = tmp_path / "small.jsonl"
    argv = ["--out", str(out), "--seed", "3", "--conversations", "2", "--turns", "3"]
    assert real_chat.main(argv) == 0
    trace = load_trace(out)
    assert Counter(r.session for r in trace.requests) == {"real-0": 3, "real-1": 3}
    assert trace.meta["seed"] == 3

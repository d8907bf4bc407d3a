"""The oracle hit ratio on a synthetic trace whose answer is worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.replay import oracle
from bench.replay.trace import load_trace
from tests.bench.synthetic import request, segment, write_trace


def _block_trace(path: Path) -> Path:
    # "<|user|>\n" + 54 characters + "\n" is 64 bytes: one message is one 16-token block,
    # so a prompt of k messages is 16k tokens and k - 1 cacheable blocks (the last token
    # is always computed).
    segments = [segment(name, name * 54) for name in "abcd"]
    user = ("user",)
    return write_trace(
        path,
        [
            *segments,
            request("r1", ["a"], roles=user, start=0),  # 16 tok, nothing cacheable
            request("r2", ["a"], ["b"], roles=user, parent="r1", after=1),  # t=1: a -> 16
            request("r3", ["a"], ["b"], ["c"], roles=user, start=0.5),  # t=0.5: a -> 16
            request("r4", ["c"], roles=user, start=2),  # 16 tok, nothing cacheable
            request("r5", ["a"], ["b"], ["c"], ["d"], roles=user, start=3),  # a,ab,abc -> 48
        ],
    )


def test_oracle_counts_longest_seen_prefix_in_nominal_order(tmp_path: Path) -> None:
    result = oracle.oracle_hit_ratio(load_trace(_block_trace(tmp_path / "t.jsonl")))
    assert result.prompt_tokens == 16 + 32 + 48 + 16 + 64
    # In line order r3 would find "ab" from r2 (96 cached); r3 is due first, so 80.
    assert result.cached_tokens == 0 + 16 + 16 + 0 + 48
    assert result.hit_ratio == pytest.approx(80 / 176)


def test_identical_prompts_still_compute_their_last_token(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path / "t.jsonl",
        [
            segment("a", "a" * 54),
            request("r1", ["a"], ["a"], roles=("user",), start=0),
            request("r2", ["a"], ["a"], roles=("user",), start=1),
        ],
    )
    result = oracle.oracle_hit_ratio(load_trace(path))
    assert (result.prompt_tokens, result.cached_tokens) == (64, 16)


def test_local_copy_matches_the_emulator_rule(tmp_path: Path) -> None:
    """The fallback must hash exactly as emulator/engine/prompt_blocks.py does."""
    module = pytest.importorskip("emulator.engine.prompt_blocks")
    body = {
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2}}}],
        "messages": [
            {"role": "system", "content": "x" * 500},
            {"role": "user", "content": "é" * 77},
        ],
    }
    assert oracle._local_render_chat(body) == module.render_chat(body)
    theirs = module.PromptHasher(block_tokens=16, bytes_per_token=4.0).blocks(
        "m", module.render_chat(body)
    )
    ours = oracle._LocalHasher(16, 4.0).blocks("m", oracle._local_render_chat(body))
    assert (ours.tokens, ours.block_ids) == (theirs.tokens, theirs.block_ids)


def test_a_bounded_cache_evicts_tails_first(tmp_path: Path) -> None:
    trace = load_trace(_block_trace(tmp_path / "t.jsonl"))
    # Three blocks: r4's own block evicts r3's tail "abc" (older than its head), so r5
    # finds "a" and "ab" but not "abc": 32 instead of 48.
    bounded = oracle.oracle_hit_ratio(trace, capacity_tokens=48)
    assert bounded.cached_tokens == 0 + 16 + 16 + 0 + 32
    assert oracle.oracle_hit_ratio(trace, capacity_tokens=10_000).cached_tokens == 80


def test_offline_routers_over_separate_caches(tmp_path: Path) -> None:
    trace = load_trace(_block_trace(tmp_path / "t.jsonl"))
    found = oracle.offline_routing_hit_ratios(trace, engines=2, capacity_tokens=10_000)
    # Nominal order r1 r3 r2 r4 r5. Round-robin: r2 finds "a" on engine 0 (r1), r5 finds
    # "a", "ab" there (r2's) but not "abc" (r3's, on engine 1).
    assert found["round-robin"] == pytest.approx((16 + 32) / 176)
    # Longest prefix keeps r1 r3 r2 r5 together: the one-cache oracle.
    assert found["longest-prefix"] == pytest.approx(80 / 176)
    # Bounded (epsilon 0.25 over uncached work): r2 and r4 spill to the idle engine, so r2
    # misses "a"; r5 still finds all of "abc" on engine 0.
    assert found["bounded-longest-prefix"] == pytest.approx((16 + 48) / 176)


def test_offline_routers_wait_for_each_response(tmp_path: Path) -> None:
    """A follow-up is sent after its parent's response: the longer that takes, the more
    other traffic passes through the cache first and may evict what it would reuse."""
    segments = [segment(name, name * 54) for name in "xyz"]  # one 16-token block each
    user = ("user",)
    trace = load_trace(
        write_trace(
            tmp_path / "t.jsonl",
            [
                *segments,
                request("a", ["x"], roles=user, start=0),
                request("b", ["x"], ["y"], roles=user, parent="a", after=0),  # reuses "x"
                request("c", ["z"], ["z"], roles=user, start=1, session="s1"),  # two blocks
            ],
        )
    )
    assert trace.nominal_start_s(response_s=5)["b"] == 5
    instant = oracle.offline_routing_hit_ratios(trace, 1, capacity_tokens=32)
    slow = oracle.offline_routing_hit_ratios(trace, 1, capacity_tokens=32, response_s=5)
    assert instant["round-robin"] == pytest.approx(16 / (16 + 32 + 32))  # b finds "x"
    assert slow["round-robin"] == 0.0  # c, sent before b now, evicted "x" from two blocks

"""The emulator's provider prompt caches: automatic (OpenAI's, DeepSeek's) and explicit
(Anthropic's cache_control), their minimum, steps, TTLs and the usage each format reports."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from emulator.provider_cache import CachePiece, PromptCacheOptions, ProviderPromptCache
from emulator.wire.anthropic_cache import cache_pieces
from tests.conftest import StartEmulator

WORDS = " the and for you"  # 4 bytes a token


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def automatic(clock: Clock, **options: Any) -> ProviderPromptCache:
    return ProviderPromptCache(PromptCacheOptions(semantics="automatic", **options), clock)


def explicit(clock: Clock, **options: Any) -> ProviderPromptCache:
    return ProviderPromptCache(PromptCacheOptions(semantics="explicit", **options), clock)


def text(tokens: int, tag: str = "") -> CachePiece:
    return CachePiece((tag + WORDS * tokens)[: tokens * 4].encode())


@pytest.mark.parametrize(
    ("tokens", "read"),
    [(1000, 0), (1024, 1024), (1100, 1024), (1152, 1152), (3000, 2944)],
)
def test_automatic_reads_whole_steps_above_the_minimum(tokens: int, read: int) -> None:
    cache = automatic(Clock())
    prompt = [text(tokens)]
    assert cache.use("m", prompt, tokens).read == 0
    use = cache.use("m", prompt, tokens)
    assert (use.read, use.written) == (read, 0)


def test_automatic_shares_only_a_common_prefix() -> None:
    cache = automatic(Clock())
    cache.use("m", [text(3000)], 3000)
    assert cache.use("m", [text(1500), text(1500, "other")], 3000).read == 1408
    assert cache.use("other-model", [text(3000)], 3000).read == 0


def test_entries_expire_idle_and_a_read_refreshes_them() -> None:
    clock = Clock()
    cache = automatic(clock, ttl_s=300)
    prompt = [text(2000)]
    cache.use("m", prompt, 2000)
    clock.now += 299
    assert cache.use("m", prompt, 2000).read > 0
    clock.now += 299
    assert cache.use("m", prompt, 2000).read > 0
    clock.now += 301
    assert cache.use("m", prompt, 2000).read == 0


def marked(piece: CachePiece, *, long: bool = False) -> CachePiece:
    return CachePiece(piece.data, breakpoint=True, long=long)


def test_explicit_writes_only_up_to_breakpoints_and_reads_them_back() -> None:
    cache = explicit(Clock())
    system, question = text(2000, "s"), text(100, "q")
    assert cache.use("m", [system, question], 2100).written == 0  # no breakpoint: no cache
    first = cache.use("m", [marked(system), question], 2100)
    assert (first.read, first.written) == (0, 2000)
    second = cache.use("m", [marked(system), text(100, "r")], 2100)
    assert (second.read, second.written) == (2000, 0)


def test_explicit_reads_an_earlier_entry_within_the_lookback() -> None:
    cache = explicit(Clock())
    turns = [text(2000, "s"), text(300, "a"), text(300, "b")]
    cache.use("m", [turns[0], marked(turns[1])], 2300)
    use = cache.use("m", [turns[0], turns[1], marked(turns[2])], 2600)
    assert (use.read, use.written) == (2300, 300)


def test_explicit_below_the_minimum_is_not_cached() -> None:
    cache = explicit(Clock())
    prompt = [marked(text(500))]
    assert cache.use("m", prompt, 500).written == 0
    assert cache.use("m", prompt, 500).read == 0


def test_one_hour_breakpoints_outlive_five_minute_ones() -> None:
    clock = Clock()
    cache = explicit(clock)
    short, long = [marked(text(2000, "a"))], [marked(text(2000, "b"), long=True)]
    cache.use("m", short, 2000)
    cache.use("m", long, 2000)
    clock.now += 600
    assert cache.use("m", short, 2000).read == 0
    assert cache.use("m", long, 2000).read == 2000


def test_anthropic_pieces_follow_the_apis_cache_order() -> None:
    body = {
        "tools": [{"name": "f", "input_schema": {}, "cache_control": {"type": "ephemeral"}}],
        "system": [{"type": "text", "text": "sys"}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "hi",
                        "cache_control": {"type": "ephemeral", "ttl": "1h"},
                    }
                ],
            },
        ],
    }
    pieces = cache_pieces(body)
    assert [(p.breakpoint, p.long) for p in pieces] == [(True, False), (False, False), (True, True)]
    assert pieces[1].data == b"system\x1fsys" and pieces[2].data == b"user\x1fhi"
    assert cache_pieces({"messages": [{"role": "user", "content": "hi"}]}) == ()


async def test_each_format_reports_the_cache_in_its_own_usage(
    start_emulator: StartEmulator,
) -> None:
    engine = await start_emulator(
        models=["m"], prompt_cache={"semantics": "explicit", "min_prefix_tokens": 1024}
    )
    block = {"type": "text", "text": WORDS * 1500, "cache_control": {"type": "ephemeral"}}
    body = {
        "model": "m",
        "max_tokens": 4,
        "system": [block],
        "messages": [{"role": "user", "content": "hi"}],
    }
    headers = {"anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient(base_url=engine.origin) as client:
        first = (await client.post("/v1/messages", json=body, headers=headers)).json()["usage"]
        second = (await client.post("/v1/messages", json=body, headers=headers)).json()["usage"]
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 1500
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0
    assert second["input_tokens"] + second["cache_read_input_tokens"] > 1500


async def test_openai_format_reports_cached_tokens(start_emulator: StartEmulator) -> None:
    engine = await start_emulator(models=["m"], prompt_cache={"semantics": "automatic"})
    body = {
        "model": "m",
        "max_tokens": 4,
        "messages": [
            {"role": "system", "content": WORDS * 1500},
            {"role": "user", "content": "hi"},
        ],
    }
    async with httpx.AsyncClient(base_url=engine.origin) as client:
        await client.post("/v1/chat/completions", json=body)
        usage = (await client.post("/v1/chat/completions", json=body)).json()["usage"]
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    assert cached >= 1024 and (cached - 1024) % 128 == 0
    assert "cache_write_tokens" not in usage["prompt_tokens_details"]

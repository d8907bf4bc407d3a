"""Provider prompt caches in the prefix index: each semantics' rules, presets, TTLs, entries
and calibration from reported cached tokens."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway.config.backends import BackendConfig
from gateway.prefix.breakpoints import BreakpointPlan
from gateway.prefix.cache_semantics import PRESETS, CacheRules
from gateway.prefix.fingerprint import BLOCK_BYTES, Fingerprint
from gateway.prefix.index import CacheSpec, PrefixIndex
from gateway.prefix.predictor import CachePredictor
from gateway.prefix.work import PromptWork


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def chain(tag: str, n: int) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(n)]


def backend(kind: str = "openai", **fields: Any) -> BackendConfig:
    address = {} if kind == "anthropic" and "emulator" in fields else {"base_url": "http://x/v1"}
    return BackendConfig.model_validate(
        {"name": "b", "kind": kind, "models": ["m"], **address, **fields}
    )


@pytest.mark.parametrize(
    ("fields", "semantics", "minimum", "step", "ttl_s"),
    [
        ({"kind": "openai"}, "openai-auto", 1024, 128, 300.0),
        ({"kind": "azure-openai"}, "openai-auto", 1024, 128, 300.0),
        ({"kind": "openai-compatible", "preset": "openai"}, "openai-auto", 1024, 128, 300.0),
        ({"kind": "anthropic"}, "anthropic-explicit", 1024, 1, 300.0),
        ({"kind": "openai-compatible", "preset": "deepseek"}, "deepseek-disk", 64, 64, 14400.0),
        ({"kind": "vllm"}, "engine", 0, 1, 600.0),
        ({"kind": "openai-compatible"}, "engine", 0, 1, 600.0),
        (
            {"kind": "anthropic", "cache": {"breakpoints": {"enabled": True, "ttl": "1h"}}},
            "anthropic-explicit",
            1024,
            1,
            3600.0,
        ),
        (
            {"kind": "anthropic", "cache": {"min_prefix_tokens": 2048, "ttl_s": 60}},
            "anthropic-explicit",
            2048,
            1,
            60.0,
        ),
        (
            {"kind": "vllm", "cache": {"semantics": "openai-auto", "increment_tokens": 64}},
            "openai-auto",
            1024,
            64,
            300.0,
        ),
    ],
)
def test_presets_by_kind_and_overrides(
    fields: dict[str, Any], semantics: str, minimum: int, step: int, ttl_s: float
) -> None:
    config = backend(**fields)
    rules = config.cache.rules(config.kind, config.preset_name)
    assert (rules.semantics, rules.min_prefix_tokens, rules.increment_tokens, rules.ttl_s) == (
        semantics,
        minimum,
        step,
        ttl_s,
    )


def test_breakpoints_are_only_for_explicit_caching() -> None:
    with pytest.raises(ValidationError, match=r"cache\.breakpoints: only for anthropic-explicit"):
        backend("openai", cache={"breakpoints": {"enabled": True}})


@pytest.mark.parametrize(
    ("semantics", "held", "reported"),
    [
        ("openai-auto", 1023, 0),
        ("openai-auto", 1024, 1024),
        ("openai-auto", 1151, 1024),
        ("openai-auto", 1152, 1152),
        ("openai-auto", 5000, 4992),
        ("deepseek-disk", 63, 0),
        ("deepseek-disk", 130, 128),
        ("anthropic-explicit", 1023, 0),
        ("anthropic-explicit", 1500, 1500),
        ("engine", 7, 7),
    ],
)
def test_cacheable_applies_the_minimum_and_increments(
    semantics: str, held: int, reported: int
) -> None:
    rules: CacheRules = PRESETS[semantics]  # type: ignore[index]
    assert rules.cacheable(held) == reported


def test_ttl_expires_idle_prefixes_and_a_hit_refreshes_them() -> None:
    clock = Clock()
    index = PrefixIndex({"a": CacheSpec(100_000, 300.0)}, clock=clock)
    prompt = chain("p", 8)
    index.insert("a", prompt)
    clock.now += 299
    index.insert("a", prompt[:4])  # a hit on the head refreshes it, not the tail
    clock.now += 2
    assert index.match(prompt, ["a"]) == {"a": 4}
    clock.now += 300
    assert index.match(prompt, ["a"]) == {"a": 0}


def test_without_refresh_on_hit_the_ttl_runs_from_the_write() -> None:
    clock = Clock()
    index = PrefixIndex({"a": CacheSpec(100_000, 300.0, refresh_on_hit=False)}, clock=clock)
    prompt = chain("p", 8)
    index.insert("a", prompt)
    clock.now += 299
    index.insert("a", prompt)
    clock.now += 2
    assert index.match(prompt, ["a"]) == {"a": 0}


def test_explicit_caching_holds_only_up_to_the_breakpoints_sent() -> None:
    index = PrefixIndex({"x": CacheSpec(100_000, 300.0, explicit=True)})
    prompt = chain("p", 10)
    index.insert("x", prompt)  # no breakpoint: nothing is written
    assert index.match(prompt, ["x"]) == {"x": 0}
    index.insert("x", prompt, entries=[3, 6])
    assert index.match(prompt, ["x"]) == {"x": 6}
    # Sharing 5 blocks is not a hit at 5: the provider reads whole entries only.
    assert index.match([*prompt[:5], b"other"], ["x"]) == {"x": 3}


def test_explicit_entries_expire_with_their_blocks() -> None:
    clock = Clock()
    index = PrefixIndex({"x": CacheSpec(100_000, 300.0, explicit=True)}, clock=clock)
    prompt = chain("p", 10)
    index.insert("x", prompt, entries=[4])
    clock.now += 301
    assert index.match(prompt, ["x"]) == {"x": 0}
    index.insert("x", prompt, entries=[8])
    assert index.match(prompt, ["x"]) == {"x": 8}


def fingerprint(blocks: list[bytes], tokens_per_block: int = 64) -> Fingerprint:
    return Fingerprint(tuple(blocks), tokens_per_block * len(blocks), BLOCK_BYTES * len(blocks))


def predictor(kind: str = "openai", **cache: Any) -> CachePredictor:
    return CachePredictor([backend(kind, cache=cache)])


def test_predictions_are_what_the_provider_would_report() -> None:
    caches = predictor("openai")
    prompt = fingerprint(chain("p", 20))  # 1,280 tokens
    assert caches.predict(prompt, ["b"], (None, None), {}).cached_tokens == {"b": 0}
    caches.remember("b", PromptWork(prompt))
    assert caches.predict(prompt, ["b"], (None, None), {}).cached_tokens == {"b": 1280}
    short = fingerprint(chain("p", 15))  # 960 tokens: below OpenAI's minimum
    assert caches.predict(short, ["b"], (None, None), {}).cached_tokens == {"b": 0}
    longer = fingerprint([*chain("p", 18), *chain("q", 4)])  # 1,152 tokens shared
    assert caches.predict(longer, ["b"], (None, None), {}).cached_tokens == {"b": 1152}


def test_explicit_remember_records_the_plans_entries() -> None:
    caches = predictor("anthropic")
    prompt = fingerprint(chain("p", 40))
    plan = BreakpointPlan((0,), (20,), "5m", True, "test")
    recorded = caches.remember("b", PromptWork(prompt, {}, {"b": plan}))
    assert len(recorded) == 20
    assert caches.predict(prompt, ["b"], (None, None), {}).cached_tokens == {"b": 1280}


@pytest.mark.parametrize(
    ("kind", "predicted", "reported", "ttl_after", "capacity_after"),
    [
        ("openai", 2048, 0, 225.0, None),  # a miss: the provider keeps less long
        ("openai", 2048, 2048, 300.0, None),  # as predicted: nothing learnt
        ("openai", 0, 2048, 330.0, None),  # held beyond the prediction: longer
        ("vllm", 2048, 0, 600.0, 0.5),  # an engine: its capacity halves, as before
    ],
)
def test_calibration_from_reported_cached_tokens(
    kind: str, predicted: int, reported: int, ttl_after: float, capacity_after: float | None
) -> None:
    caches = predictor(kind)
    group = caches.group("b")
    capacity = caches.index.capacity_blocks(group)
    work = PromptWork(fingerprint(chain("p", 40)), {"b": predicted})
    caches.correct("b", work, reported)
    assert caches.index.ttl_s(group) == pytest.approx(ttl_after)
    if capacity_after is not None:
        assert caches.index.capacity_blocks(group) == int(capacity * capacity_after)


def test_ttl_calibration_stays_within_its_bounds() -> None:
    caches = predictor("openai")
    group = caches.group("b")
    work = PromptWork(fingerprint(chain("p", 40)), {"b": 2048})
    for _ in range(50):
        caches.correct("b", work, 0)
    assert caches.index.ttl_s(group) == 30.0
    for _ in range(200):
        caches.correct("b", PromptWork(work.fingerprint, {"b": 0}), 2048)
    assert caches.index.ttl_s(group) == 3600.0


def test_a_reload_carries_entries_and_the_learnt_ttl_over() -> None:
    specs = {"x": CacheSpec(100_000, 300.0, max_ttl_s=3600.0, explicit=True)}
    old, new = PrefixIndex(specs), PrefixIndex(specs)
    prompt = chain("p", 10)
    old.insert("x", prompt, entries=[6])
    old.lengthen_ttl("x")
    new.carry_over(old, ["x"])
    assert new.match(prompt, ["x"]) == {"x": 6}
    assert new.ttl_s("x") == old.ttl_s("x") == 330.0


@pytest.mark.parametrize(
    ("emulator", "cache", "semantics", "minimum", "step", "ttl_s"),
    [
        ({}, {}, "engine", 0, 1, 600.0),  # its engine caches what it computes
        ({"prompt_cache": {"semantics": "explicit"}}, {}, "anthropic-explicit", 1024, 1, 300.0),
        (
            {
                "prompt_cache": {
                    "semantics": "automatic",
                    "min_prefix_tokens": 64,
                    "increment_tokens": 64,
                    "ttl_s": 7200,
                }
            },
            {},
            "openai-auto",
            64,
            64,
            7200.0,
        ),
        (
            {"prompt_cache": {"semantics": "explicit"}},
            {"ttl_s": 60},
            "anthropic-explicit",
            1024,
            1,
            60.0,
        ),
    ],
)
def test_an_emulated_cloud_is_predicted_as_its_emulator_caches(
    emulator: dict[str, Any],
    cache: dict[str, Any],
    semantics: str,
    minimum: int,
    step: int,
    ttl_s: float,
) -> None:
    rules = backend("anthropic", emulator=emulator, cache=cache).cache_rules
    assert (rules.semantics, rules.min_prefix_tokens, rules.increment_tokens, rules.ttl_s) == (
        semantics,
        minimum,
        step,
        ttl_s,
    )

"""The hybrid fleet of `bench replay --fleet hybrid`: local engines beside emulated clouds.

Two local engines (the batched emulator, a small KV cache, an amortised price), one cloud
speaking OpenAI's format (automatic prompt cache, cached input at 0.25x) and one speaking
Anthropic's (explicit `cache_control` cache with the gateway's automatic breakpoints, 5-min
TTL, writes at 1.25x and reads at 0.1x the input price). The clouds answer later (a fixed
network and queueing delay before the first token), prefill fast, and rate-limit.

Every figure below is in trace time; `plan_hybrid` converts what the emulators and the
gateway read off the wall clock (cache TTLs, rate limits, speed priors) by the run's time
scale, as the engines' own delays are. Prices are illustrative list prices per million
tokens (GPT-4.1 and Claude Sonnet 4.5 as published in late 2025; the OpenAI-format 200K
tier is modelled on Anthropic's and Gemini's long-context tiers, which GPT-4.1 lacks).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from policies.prices import Prices

from .fleet import EngineOptions, FleetPlan, free_port_range

ENGINE_MAIN = [sys.executable, "-m", "bench.replay.engine_main"]
LOCAL_KV_TOKENS = 40_000
LOCAL_CONTEXT_TOKENS = 32_768
CLOUD_CONTEXT_TOKENS = 1_000_000
PROMPT_CACHE_TTL_S = 300.0
"""OpenAI's automatic cache (idle) and Anthropic's `5m` breakpoints."""

LOCAL_PRICES: dict[str, Any] = {"input_usd_per_mtok": 0.05, "output_usd_per_mtok": 0.20}
"""Amortised: GPU hours over the tokens they serve (as examples/cheapest.yaml)."""
OPENAI_PRICES: dict[str, Any] = {
    "input_usd_per_mtok": 2.0,
    "cached_input_usd_per_mtok": 0.50,
    "output_usd_per_mtok": 8.0,
    "tiers": [
        {
            "above_prompt_tokens": 200_000,
            "input_usd_per_mtok": 4.0,
            "cached_input_usd_per_mtok": 1.0,
            "output_usd_per_mtok": 12.0,
        }
    ],
}
ANTHROPIC_PRICES: dict[str, Any] = {
    "input_usd_per_mtok": 3.0,
    "cached_input_usd_per_mtok": 0.30,
    "cache_write_usd_per_mtok": 3.75,
    "cache_write_1h_usd_per_mtok": 6.0,
    "output_usd_per_mtok": 15.0,
    "tiers": [
        {
            "above_prompt_tokens": 200_000,
            "input_usd_per_mtok": 6.0,
            "cached_input_usd_per_mtok": 0.60,
            "cache_write_usd_per_mtok": 7.50,
            "cache_write_1h_usd_per_mtok": 12.0,
            "output_usd_per_mtok": 22.50,
        }
    ],
}

BackendKind = Literal["openai-compatible", "openai", "anthropic"]


@dataclass(frozen=True)
class CloudSpec:
    """An emulated cloud in trace time: its format, latency, limits and prices."""

    name: str
    kind: BackendKind
    semantics: Literal["automatic", "explicit"]
    base_latency_ms: float
    prefill_ms_per_1k_tokens: float
    token_delay_ms: float
    requests_per_minute: int
    tokens_per_minute: int
    prices: dict[str, Any]


CLOUDS = (
    CloudSpec(
        name="cloud-openai",
        kind="openai",
        semantics="automatic",
        base_latency_ms=500.0,
        prefill_ms_per_1k_tokens=25.0,
        token_delay_ms=12.0,
        requests_per_minute=120,
        tokens_per_minute=1_500_000,
        prices=OPENAI_PRICES,
    ),
    CloudSpec(
        name="cloud-anthropic",
        kind="anthropic",
        semantics="explicit",
        base_latency_ms=700.0,
        prefill_ms_per_1k_tokens=30.0,
        token_delay_ms=16.0,
        requests_per_minute=90,
        tokens_per_minute=1_000_000,
        prices=ANTHROPIC_PRICES,
    ),
)
LOCAL_COUNT = 2


@dataclass(frozen=True)
class HybridPlan:
    """The processes to start, and what the gateway's config says of each backend."""

    fleet: FleetPlan
    names: list[str]
    backends: dict[str, dict[str, Any]]
    """Backend name -> the keys of its config entry besides name, base_url and models."""
    prices: dict[str, Prices]


def plan_hybrid(options: EngineOptions) -> HybridPlan:
    """Ports, command lines and gateway entries of the hybrid fleet at `options.time_scale`
    (local engines take their speeds from `options`, their KV size from LOCAL_KV_TOKENS)."""
    scale = options.time_scale or 1.0
    settings: list[dict[str, Any]] = []
    backends: dict[str, dict[str, Any]] = {}
    for i in range(LOCAL_COUNT):
        name = f"local-{i}"
        settings.append(_local_settings(options))
        backends[name] = _local_entry(options, scale)
    for cloud in CLOUDS:
        settings.append(_cloud_settings(cloud, options, scale))
        backends[cloud.name] = _cloud_entry(cloud, scale)
    ports = [free_port_range(1) for _ in settings]
    argvs = [
        [*ENGINE_MAIN, "--port", str(port), "--settings-json", orjson.dumps(s).decode()]
        for port, s in zip(ports, settings, strict=True)
    ]
    prices = {n: Prices.model_validate(e["pricing"]) for n, e in backends.items()}
    fleet = FleetPlan(argvs, ports, "hybrid: batched locals, linear clouds")
    return HybridPlan(fleet, list(backends), backends, prices)


def _local_settings(options: EngineOptions) -> dict[str, Any]:
    return {
        "models": list(options.models),
        "ignore_eos": True,  # a trace's max_tokens is the answer's length (FORMAT.md)
        "time_scale": options.time_scale,
        "cost_model": "batched",
        "kv_capacity_tokens": LOCAL_KV_TOKENS,
        "prefill_tokens_per_s": options.prefill_tokens_per_s,
        "decode_base_ms": options.decode_base_ms,
        "decode_per_seq_ms": options.decode_per_seq_ms,
    }


def _local_entry(options: EngineOptions, scale: float) -> dict[str, Any]:
    return {
        "kind": "openai-compatible",
        "context_window_tokens": LOCAL_CONTEXT_TOKENS,
        "pricing": LOCAL_PRICES,
        "cache": {
            "capacity_tokens": LOCAL_KV_TOKENS,
            "prefill_tokens_per_s": options.prefill_tokens_per_s / scale,
            "tpot_ms": options.decode_base_ms * scale,
        },
    }


def _cloud_settings(cloud: CloudSpec, options: EngineOptions, scale: float) -> dict[str, Any]:
    # The emulator scales its delays itself; TTLs and buckets run on the wall clock.
    return {
        "models": list(options.models),
        "ignore_eos": True,
        "time_scale": options.time_scale,
        "cost_model": "linear",
        "base_latency_ms": cloud.base_latency_ms,
        "prefill_ms_per_1k_tokens": cloud.prefill_ms_per_1k_tokens,
        "token_delay_ms": cloud.token_delay_ms,
        "rate_limit_requests_per_minute": math.ceil(cloud.requests_per_minute / scale),
        "rate_limit_tokens_per_minute": math.ceil(cloud.tokens_per_minute / scale),
        "prompt_cache": {
            "semantics": cloud.semantics,
            "ttl_s": PROMPT_CACHE_TTL_S * scale,
            "ttl_1h_s": 3600.0 * scale,
        },
    }


def _cloud_entry(cloud: CloudSpec, scale: float) -> dict[str, Any]:
    cache: dict[str, Any] = {
        "ttl_s": PROMPT_CACHE_TTL_S * scale,
        "max_ttl_s": (3600.0 if cloud.semantics == "automatic" else PROMPT_CACHE_TTL_S) * scale,
        "prefill_tokens_per_s": 1_000_000 / cloud.prefill_ms_per_1k_tokens / scale,
        "tpot_ms": cloud.token_delay_ms * scale,
    }
    if cloud.semantics == "explicit":
        cache["breakpoints"] = {"enabled": True, "ttl": "5m"}
    return {
        "kind": cloud.kind,
        "context_window_tokens": CLOUD_CONTEXT_TOKENS,
        "pricing": cloud.prices,
        "cache": cache,
        "rate_limits": {"max_cool_down_s": 60.0 * scale},
    }


def describe_hybrid() -> dict[str, Any]:
    """The fleet's members as the report's parameters show them (trace time)."""
    members: dict[str, Any] = {
        f"local-{i}": {
            "format": "openai (batched engine)",
            "kv_capacity_tokens": LOCAL_KV_TOKENS,
            "context_window_tokens": LOCAL_CONTEXT_TOKENS,
            "pricing": LOCAL_PRICES,
        }
        for i in range(LOCAL_COUNT)
    }
    for cloud in CLOUDS:
        members[cloud.name] = {
            "format": cloud.kind,
            "prompt_cache": cloud.semantics,
            "prompt_cache_ttl_s": PROMPT_CACHE_TTL_S,
            "base_latency_ms": cloud.base_latency_ms,
            "prefill_ms_per_1k_tokens": cloud.prefill_ms_per_1k_tokens,
            "token_delay_ms": cloud.token_delay_ms,
            "requests_per_minute": cloud.requests_per_minute,
            "tokens_per_minute": cloud.tokens_per_minute,
            "pricing": cloud.prices,
        }
    return {"fleet": "hybrid", "hybrid_backends": members}


def summary_line() -> str:
    """One line for the report: who is in the fleet and at what price."""
    local = LOCAL_PRICES
    parts = [
        f"{LOCAL_COUNT} local engines x {LOCAL_KV_TOKENS:,} KV tokens at "
        f"${local['input_usd_per_mtok']:g} in / ${local['output_usd_per_mtok']:g} out per Mtok "
        "(amortised)"
    ]
    for c in CLOUDS:
        p = c.prices
        parts.append(
            f"{c.name} ({c.semantics} cache, +{c.base_latency_ms:g} ms, {c.requests_per_minute} "
            f"RPM) at ${p['input_usd_per_mtok']:g} in / ${p['cached_input_usd_per_mtok']:g} cached"
            f" / ${p['output_usd_per_mtok']:g} out per Mtok, 2x above 200K"
        )
    return "hybrid fleet: " + "; ".join(parts) + " (illustrative prices)"

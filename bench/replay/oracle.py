"""The oracle cache-hit ratio: what one engine with an infinite prefix cache would reuse.

For each request in nominal dispatch order (roots at `start`, children `after` their
parent as if responses took no time), the longest prefix of its prompt, in the emulator's
KV blocks, already seen in any earlier request counts as cached. No router can beat this
on the trace: it is the ceiling for `token_cache_hit_ratio`.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .trace import Trace, TraceRequest

BYTES_PER_TOKEN = 4.0
BLOCK_TOKENS = 16
ORACLE_MODEL = "oracle"


@dataclass(frozen=True, slots=True)
class PromptBlocks:
    tokens: int
    block_ids: tuple[bytes, ...]


def _local_render_chat(body: dict[str, Any]) -> list[bytes]:
    """LOCAL FALLBACK of emulator/engine/prompt_blocks.py's `render_chat`, same rule:
    the tools JSON (sorted keys; b"" without tools), then `<|role|>\\ncontent\\n` per message."""
    tools = body.get("tools")
    parts = [orjson.dumps(tools, option=orjson.OPT_SORT_KEYS) if tools else b""]
    for message in body["messages"]:
        parts.append(f"<|{message['role']}|>\n{message['content']}\n".encode())
    return parts


class _LocalHasher:
    """LOCAL FALLBACK of the emulator's `PromptHasher`: chained blake2b over fixed blocks,
    starting from a digest of the model name; a final partial block has no id."""

    def __init__(self, block_tokens: int, bytes_per_token: float) -> None:
        self.block_tokens = block_tokens
        self.bytes_per_token = bytes_per_token
        self.block_bytes = max(1, round(block_tokens * bytes_per_token))

    def blocks(self, model: str, parts: Sequence[bytes]) -> PromptBlocks:
        text = b"".join(parts)
        last = hashlib.blake2b(model.encode(), digest_size=8).digest()
        ids = []
        size = self.block_bytes
        for start in range(0, len(text) - len(text) % size, size):
            last = hashlib.blake2b(last + text[start : start + size], digest_size=8).digest()
            ids.append(last)
        return PromptBlocks(max(1, math.ceil(len(text) / self.bytes_per_token)), tuple(ids))


def _emulator_rule() -> tuple[Any, Any, str]:
    """The emulator's own rendering and hashing when present, else the local copy."""
    try:
        from emulator.engine.prompt_blocks import PromptHasher, render_chat
    except ImportError:
        return _local_render_chat, _LocalHasher(BLOCK_TOKENS, BYTES_PER_TOKEN), "local copy"
    hasher = PromptHasher(block_tokens=BLOCK_TOKENS, bytes_per_token=BYTES_PER_TOKEN)
    return render_chat, hasher, "emulator.engine.prompt_blocks"


@dataclass(frozen=True, slots=True)
class OracleResult:
    hit_ratio: float
    cached_tokens: int
    prompt_tokens: int
    rule: str
    """Whose prompt-block code was used: the emulator's module or the local copy."""


def chat_body(trace: Trace, request: TraceRequest) -> dict[str, Any]:
    messages = [{"role": m.role, "content": trace.message_text(m)} for m in request.messages]
    body: dict[str, Any] = {"messages": messages}
    if request.tools is not None:
        body["tools"] = trace.tools(request.tools)
    return body


def _prompts_in_order(trace: Trace, response_s: float = 0.0) -> tuple[list[PromptBlocks], str]:
    """Every request's prompt blocks, in dispatch order if every response took `response_s`;
    and whose code made them."""
    render, hasher, rule = _emulator_rule()
    due = trace.nominal_start_s(response_s)
    order = sorted(trace.requests, key=lambda r: (due[r.id], r.index))
    return [hasher.blocks(ORACLE_MODEL, render(chat_body(trace, r))) for r in order], rule


def _cacheable(prompt: PromptBlocks) -> tuple[bytes, ...]:
    """As in the emulator, a prompt's last token is always computed, so only the blocks
    before it can be hits: `(tokens - 1) // block_tokens` at most."""
    return prompt.block_ids[: (prompt.tokens - 1) // BLOCK_TOKENS]


def _hits(blocks: Sequence[bytes], cache: Mapping[bytes, None]) -> int:
    hits = 0
    for block in blocks:
        if block not in cache:
            break
        hits += 1
    return hits


def _remember(cache: OrderedDict[bytes, None], prompt: PromptBlocks, capacity: int | None) -> None:
    """Insert tail first, so that LRU takes a prompt's tail before its head (as engines)."""
    for block in reversed(prompt.block_ids):
        cache[block] = None
        cache.move_to_end(block)
    while capacity is not None and len(cache) > capacity:
        cache.popitem(last=False)


def oracle_hit_ratio(trace: Trace, capacity_tokens: int | None = None) -> OracleResult:
    """Σ longest-seen-prefix tokens / Σ prompt tokens, in nominal dispatch order.

    With `capacity_tokens` the one engine's cache is that big, LRU, a prompt's tail older
    than its head (as an engine frees them): the ceiling for a fleet whose KV, pooled, is
    that size, before any of it is held by running requests.
    """
    prompts, rule = _prompts_in_order(trace)
    capacity = None if capacity_tokens is None else max(1, capacity_tokens // BLOCK_TOKENS)
    seen: OrderedDict[bytes, None] = OrderedDict()
    cached = total = 0
    for prompt in prompts:
        cached += _hits(_cacheable(prompt), seen) * BLOCK_TOKENS
        total += prompt.tokens
        _remember(seen, prompt, capacity)
    return OracleResult(cached / total if total else 0.0, cached, total, rule)


OFFLINE_ROUTERS = ("round-robin", "longest-prefix", "bounded-longest-prefix")


def offline_routing_hit_ratios(
    trace: Trace,
    engines: int,
    capacity_tokens: int,
    epsilon: float = 0.25,
    response_s: float = 0.0,
) -> dict[str, float]:
    """Hit ratios of simple routers over `engines` separate LRU caches of `capacity_tokens`,
    in dispatch order if every response took `response_s` (nominal order by default), with
    no KV ever held by a running request (each prompt is cached the moment it is sent and
    only LRU evicts it).

    - round-robin: request i to engine i mod n;
    - longest-prefix: to the engine holding the longest prefix (ties: least work so far);
    - bounded-longest-prefix: the same among engines whose uncached prompt tokens so far,
      this request's included, stay within (1 + epsilon) times the mean.

    With `response_s` = 0, the gap between the pooled-KV oracle and bounded-longest-prefix
    is what splitting the KV over engines costs a good router. A follow-up turn is sent only
    after its parent's response, and the longer that takes the more other traffic passes
    through the caches in between: with `response_s` set to a live run's typical end-to-end
    time, the gap to that run is what else it adds (KV held by running requests, requests
    in flight at once, a router that can only predict what engines hold).
    """
    prompts, _ = _prompts_in_order(trace, response_s)
    capacity = max(1, capacity_tokens // BLOCK_TOKENS)
    found = {}
    for router in OFFLINE_ROUTERS:
        caches = [OrderedDict[bytes, None]() for _ in range(engines)]
        work = [0] * engines
        cached = total = 0
        for i, prompt in enumerate(prompts):
            blocks = _cacheable(prompt)
            hits = [_hits(blocks, cache) for cache in caches]
            choices: Sequence[int] = range(engines)
            if router == "bounded-longest-prefix":
                bound = (1 + epsilon) * (sum(work) + prompt.tokens) / engines
                within = [
                    e for e in choices if work[e] + prompt.tokens - hits[e] * BLOCK_TOKENS <= bound
                ]
                choices = within or choices
            if router == "round-robin":
                chosen = i % engines
            else:
                chosen = max(choices, key=lambda e: (hits[e], -work[e]))
            work[chosen] += prompt.tokens - hits[chosen] * BLOCK_TOKENS
            cached += hits[chosen] * BLOCK_TOKENS
            total += prompt.tokens
            _remember(caches[chosen], prompt, capacity)
        found[router] = cached / total if total else 0.0
    return found


@dataclass(frozen=True, slots=True)
class OfflineReferences:
    """What every run on one trace and fleet is compared with: the oracle, the oracle with
    the fleet's KV pooled in one LRU cache, and the offline routers over its caches."""

    oracle: OracleResult
    pooled_kv_hit_ratio: float
    routing_hit_ratios: dict[str, float]

    def parameters(self) -> dict[str, Any]:
        """The report parameters these fill in (rounded as the report shows them)."""
        return {
            "oracle_rule": self.oracle.rule,
            "oracle_pooled_kv_hit_ratio": round(self.pooled_kv_hit_ratio, 4),
            "offline_routing_hit_ratios": {
                k: round(v, 4) for k, v in self.routing_hit_ratios.items()
            },
        }


def offline_references(trace: Trace, engines: int, kv_capacity_tokens: int) -> OfflineReferences:
    """The offline references of `trace` on `engines` engines of `kv_capacity_tokens` each."""
    return OfflineReferences(
        oracle_hit_ratio(trace),
        oracle_hit_ratio(trace, engines * kv_capacity_tokens).hit_ratio,
        offline_routing_hit_ratios(trace, engines, kv_capacity_tokens),
    )

"""Cache breakpoints for explicit-caching backends: the client's own, or ones the gateway adds.

A backend with `anthropic-explicit` semantics caches only prefixes that end at a
`cache_control` breakpoint. When the client set any, those are the request's (the index
records them; nothing is added). Otherwise, with `cache.breakpoints.enabled`, the gateway
considers the longest stable prefixes, in the provider's order (tools, system, messages):

1. after the tools and the leading system messages;
2. at the end of the conversation so far: the last message before the new turn (the
   trailing user and tool messages).

Each is placed only when its prefix reaches the provider's minimum and it pays: it is
already held (a read refreshes it at the read price), or its predicted reuses `r` within
the TTL save more than the write costs, `r * (input - read) > write - input`. Reuse is
predicted from recent requests (`ReuseTracker`): how often the same prefix was sent
within the TTL, and, for a conversation, whether its previous turn came within the TTL
(then its next turn is expected to as well).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from gateway.prefix.cache_semantics import (
        AutoBreakpointsConfig,
        BreakpointTtl,
        CacheRules,
    )
    from gateway.prefix.fingerprint import Fingerprint
    from policies.prices import Prices

MAX_BREAKPOINTS = 4
"""The most a Messages API request may carry."""
TOOLS = -1
"""A boundary after the tools alone (message indexes start at 0)."""

DEFAULT_WRITE = {"5m": 1.25, "1h": 2.0}
DEFAULT_READ = 0.1
"""Anthropic's multipliers of the input price, used when the backend's prices leave the
cache prices unset."""

_SYSTEM_ROLES = frozenset({"system", "developer"})
_NEW_TURN_ROLES = frozenset({"user", "tool"})


@dataclass(frozen=True, slots=True)
class BreakpointPlan:
    """One request's breakpoints on one backend, and why."""

    after_messages: tuple[int, ...]
    """Boundaries as OpenAI message indexes, each after that message (`TOOLS`: after the
    tools alone), in order."""
    entry_blocks: tuple[int, ...]
    """The same boundaries as full blocks of the fingerprint (what the index records),
    only those at least the provider's minimum."""
    ttl: BreakpointTtl
    added: bool
    """True: the gateway adds them; False: the client set its own."""
    reason: str
    noted: tuple[int, ...] = ()
    """Block counts the reuse tracker notes when the request is sent: its stable prefix,
    its conversation so far and its whole prompt."""

    def describe(self) -> dict[str, object]:
        return {
            "after_messages": list(self.after_messages),
            "ttl": self.ttl,
            "added": self.added,
            "reason": self.reason,
        }


class ReuseTracker:
    """Recent sightings of prefix boundaries (by block id), at most `max_entries` (LRU)."""

    def __init__(
        self, *, max_entries: int = 100_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._max_entries = max_entries
        self._clock = clock
        self._seen: OrderedDict[bytes, tuple[int, float]] = OrderedDict()

    def seen(self, block: bytes, within_s: float) -> int:
        """Sightings of `block` in a run whose gaps were all within `within_s`, the last
        one within `within_s` of now; 0 when none."""
        found = self._seen.get(block)
        if found is None or self._clock() - found[1] > within_s:
            return 0
        return found[0]

    def note(self, blocks: Iterable[bytes], within_s: float) -> None:
        now = self._clock()
        seen = self._seen
        for block in blocks:
            count, last = seen.pop(block, (0, now))
            seen[block] = (count + 1 if now - last <= within_s else 1, now)
        while len(seen) > self._max_entries:
            seen.popitem(last=False)

    def note_request(self, fingerprint: Fingerprint, plan: BreakpointPlan, ttl_s: float) -> None:
        """Remember the request's boundaries its plan noted, as it is sent."""
        blocks = fingerprint.blocks
        self.note((blocks[n - 1] for n in plan.noted if 0 < n <= len(blocks)), ttl_s)

    def __len__(self) -> int:
        return len(self._seen)


@dataclass(frozen=True, slots=True)
class PlanInputs:
    """What one backend's plan reads besides the request."""

    rules: CacheRules
    config: AutoBreakpointsConfig
    held_tokens: int
    """What the index predicts the backend holds of this prompt (an entry's end)."""
    ttl_s: float
    """The TTL the index assumes now (the window reuse is counted in)."""
    prices: Prices | None = None


def plan_breakpoints(
    fingerprint: Fingerprint,
    messages: Sequence[Any],
    tools: Any,
    inputs: PlanInputs,
    reuse: ReuseTracker,
) -> BreakpointPlan | None:
    """The client's breakpoints, else the ones worth adding; None when neither applies."""
    client = client_breakpoints(messages, tools)
    stable, conversation = boundaries(messages)
    ends = [fingerprint.blocks_after_message(i) for i in (stable, conversation) if i is not None]
    noted = tuple(sorted({*ends, len(fingerprint.blocks)}))
    if client is not None:
        entries = _entries(fingerprint, client, inputs.rules)
        ttl = client_ttl(messages, tools)
        return BreakpointPlan(client, entries, ttl, False, "the client's own", noted)
    if not inputs.config.enabled:
        return None
    placed: list[int] = []
    reasons: list[str] = []
    for name, index in (("tools+system", stable), ("conversation", conversation)):
        if index is None:
            continue
        place, why = _verdict(fingerprint, messages, index, inputs, reuse)
        reasons.append(f"{name}: {why}")
        if place:
            placed.append(index)
    chosen = tuple(placed[:MAX_BREAKPOINTS])
    entries = _entries(fingerprint, chosen, inputs.rules)
    reason = "; ".join(reasons) or "no stable prefix"
    return BreakpointPlan(chosen, entries, inputs.config.ttl, True, reason, noted)


def _verdict(
    fingerprint: Fingerprint,
    messages: Sequence[Any],
    index: int,
    inputs: PlanInputs,
    reuse: ReuseTracker,
) -> tuple[bool, str]:
    """Whether a breakpoint after message `index` pays, and why (module docstring)."""
    blocks = fingerprint.blocks_after_message(index)
    tokens = fingerprint.tokens_in(blocks)
    minimum = inputs.rules.min_prefix_tokens
    if blocks == 0 or tokens < minimum:
        return False, f"skipped, {tokens:,} tokens below the minimum {minimum:,}"
    if tokens <= inputs.held_tokens:
        return True, f"held, {tokens:,} tokens read and refreshed"
    window = inputs.ttl_s
    reuses = reuse.seen(fingerprint.blocks[blocks - 1], window)
    previous = fingerprint.blocks_after_message(index - 1) if index > 0 else 0
    turns = index >= 0 and _role(messages[index]) == "assistant" and previous > 0
    if turns and reuse.seen(fingerprint.blocks[previous - 1], window):
        reuses += 1  # its previous turn came within the TTL: the next one is expected to
    write, read = _multipliers(inputs.prices, inputs.config.ttl, tokens)
    if reuses * (1.0 - read) > write - 1.0:
        return True, f"pays, {tokens:,} tokens, {reuses} reuse(s) predicted"
    return False, f"not placed, {tokens:,} tokens, {reuses} reuse(s) predicted do not pay the write"


def _multipliers(prices: Prices | None, ttl: BreakpointTtl, tokens: int) -> tuple[float, float]:
    """The cache write and read prices as multiples of the input price."""
    if prices is None:
        return DEFAULT_WRITE[ttl], DEFAULT_READ
    rates = prices.rates(tokens)
    if rates.input <= 0:
        return DEFAULT_WRITE[ttl], DEFAULT_READ
    short, long = prices.cache_write_usd_per_mtok, prices.cache_write_1h_usd_per_mtok
    given = long if ttl == "1h" and long is not None else short
    write = (rates.cache_write_1h if ttl == "1h" else rates.cache_write) / rates.input
    read = rates.cached_input / rates.input
    if given is None:
        write = DEFAULT_WRITE[ttl]
    if prices.cached_input_usd_per_mtok is None:
        read = DEFAULT_READ
    return write, read


def _entries(
    fingerprint: Fingerprint, boundaries: Sequence[int], rules: CacheRules
) -> tuple[int, ...]:
    ends = (fingerprint.blocks_after_message(i) for i in boundaries)
    return tuple(n for n in ends if n > 0 and fingerprint.tokens_in(n) >= rules.min_prefix_tokens)


def boundaries(messages: Sequence[Any]) -> tuple[int | None, int | None]:
    """The stable prefix's last message (`TOOLS` without system messages) and the
    conversation so far's; None where there is none. Both None when a system message
    follows another role: the provider moves it up, so the prefixes would differ."""
    roles = [_role(m) for m in messages]
    leading = 0
    while leading < len(roles) and roles[leading] in _SYSTEM_ROLES:
        leading += 1
    if any(role in _SYSTEM_ROLES for role in roles[leading:]):
        return None, None
    stable = leading - 1 if leading else TOOLS
    end = len(roles)
    while end > leading and roles[end - 1] in _NEW_TURN_ROLES:
        end -= 1
    conversation = end - 1 if end > leading else None
    return stable, conversation


def client_breakpoints(messages: Sequence[Any], tools: Any) -> tuple[int, ...] | None:
    """Where the client's own `cache_control` marks end prefixes, as message boundaries
    (a mark on a part before the message's last counts at the message before); None when
    it set none."""
    found: list[int] = []
    marked = False
    if isinstance(tools, list) and any(_marked(tool) for tool in tools):
        marked = True
        if _marked(tools[-1]):
            found.append(TOOLS)
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        parts = content if isinstance(content, list) else []
        if _marked(message) or (parts and _marked(parts[-1])):
            marked = True
            found.append(index)
        elif any(_marked(part) for part in parts):
            marked = True
            found.append(index - 1)
    return tuple(sorted(set(found))) if marked else None


def client_ttl(messages: Sequence[Any], tools: Any) -> BreakpointTtl:
    """The retention of the client's last breakpoint in the provider's order (tools,
    system messages, the rest): the one the prompt's uncached part is written with."""
    items: list[Any] = list(tools) if isinstance(tools, list) else []
    ordered = sorted(messages, key=lambda message: _role(message) not in _SYSTEM_ROLES)
    for message in ordered:
        content = message.get("content") if isinstance(message, dict) else None
        items.extend(content if isinstance(content, list) else ())
        items.append(message)
    last = next((item["cache_control"] for item in reversed(items) if _marked(item)), None)
    return "1h" if last is not None and last.get("ttl") == "1h" else "5m"


def _marked(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("cache_control"), dict)


def _role(message: Any) -> str:
    return str(message.get("role", "")) if isinstance(message, dict) else ""

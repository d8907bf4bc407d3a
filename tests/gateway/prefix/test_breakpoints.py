"""Where the gateway puts Anthropic cache breakpoints, and when they pay."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.prefix.breakpoints import (
    TOOLS,
    PlanInputs,
    ReuseTracker,
    boundaries,
    client_breakpoints,
    plan_breakpoints,
)
from gateway.prefix.cache_semantics import PRESETS, AutoBreakpointsConfig
from gateway.prefix.fingerprint import Fingerprinter
from gateway.prefix.token_count import TokenCounter
from policies.prices import Prices

LONG = " the and for you" * 400  # 1,600 tokens
SHORT = "be brief"
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
RULES = PRESETS["anthropic-explicit"]
ON = AutoBreakpointsConfig(enabled=True)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def sys(text: str = LONG) -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(text: str = "question") -> dict[str, Any]:
    return {"role": "user", "content": text}


def bot(text: str = LONG) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


FINGERPRINTS = Fingerprinter(TokenCounter())


def plan(
    messages: list[dict[str, Any]],
    *,
    tools: Any = None,
    reuse: ReuseTracker | None = None,
    held: int = 0,
    config: AutoBreakpointsConfig = ON,
    prices: Prices | None = None,
) -> Any:
    fingerprint = FINGERPRINTS.chat("m", messages, tools)
    inputs = PlanInputs(RULES, config, held, 300.0, prices)
    return plan_breakpoints(fingerprint, messages, tools, inputs, reuse or ReuseTracker())


def seen(
    messages: list[dict[str, Any]], times: int = 1, clock: Clock | None = None
) -> ReuseTracker:
    """A tracker that saw `messages` sent `times` times."""
    tracker = ReuseTracker(clock=clock or Clock())
    fingerprint = FINGERPRINTS.chat("m", messages, None)
    for _ in range(times):
        tracker.note_request(fingerprint, plan(messages, reuse=tracker), 300.0)
    return tracker


@pytest.mark.parametrize(
    ("messages", "tools", "expected"),
    [
        ([sys(), user()], None, (0, None)),
        ([sys(), sys(), user()], None, (1, None)),
        ([user()], [TOOL], (TOOLS, None)),
        ([sys(), user(), bot(), user()], None, (0, 2)),
        (
            [sys(), user(), bot(), {"role": "tool", "tool_call_id": "1", "content": "x"}],
            None,
            (0, 2),
        ),
        ([sys(), user(), sys(), user()], None, (None, None)),  # moved up by the provider
    ],
)
def test_boundaries(messages: list[dict[str, Any]], tools: Any, expected: tuple[Any, Any]) -> None:
    assert boundaries(messages) == expected


def test_a_first_sighting_does_not_pay_a_second_does() -> None:
    messages = [sys(), user()]
    first = plan(messages)
    assert first.after_messages == () and first.added
    assert "0 reuse(s) predicted do not pay" in first.reason
    second = plan([sys(), user("another")], reuse=seen(messages))
    assert second.after_messages == (0,) and second.entry_blocks


def test_a_held_prefix_is_always_marked() -> None:
    chosen = plan([sys(), user()], held=10_000)
    assert chosen.after_messages == (0,) and chosen.reason.startswith("tools+system: held")


def test_prefixes_below_the_minimum_are_skipped() -> None:
    chosen = plan([sys(SHORT), user()], held=10_000)
    assert chosen.after_messages == () and "below the minimum" in chosen.reason


def test_a_continuing_conversation_marks_its_history() -> None:
    earlier = [sys(), user("one")]
    tracker = seen(earlier)
    chosen = plan([*earlier, bot(), user("two")], reuse=tracker)
    assert chosen.after_messages == (0, 2)
    assert "conversation: pays" in chosen.reason


def test_a_conversation_idle_beyond_the_ttl_is_not_expected_back() -> None:
    clock = Clock()
    earlier = [sys(), user("one")]
    tracker = seen(earlier, clock=clock)
    clock.now += 301
    chosen = plan([*earlier, bot(), user("two")], reuse=tracker)
    assert chosen.after_messages == ()


@pytest.mark.parametrize(
    ("ttl", "prices", "sightings", "placed"),
    [
        ("5m", None, 1, True),  # 0.9 saved per reuse > 0.25 extra for the write
        ("1h", None, 1, False),  # 0.9 < 1.0 extra for a 1 h write
        ("1h", None, 2, True),
        # A provider that bills writes at 3x input and reads at 0.5x: 2 reuses are needed.
        (
            "5m",
            Prices(input_usd_per_mtok=1, cache_write_usd_per_mtok=3, cached_input_usd_per_mtok=0.5),
            3,
            False,
        ),
        (
            "5m",
            Prices(input_usd_per_mtok=1, cache_write_usd_per_mtok=3, cached_input_usd_per_mtok=0.5),
            5,
            True,
        ),
        # Prices without cache prices: Anthropic's multipliers.
        ("5m", Prices(input_usd_per_mtok=3, output_usd_per_mtok=15), 1, True),
    ],
)
def test_the_write_must_pay(ttl: str, prices: Prices | None, sightings: int, placed: bool) -> None:
    messages = [sys(), user()]
    config = AutoBreakpointsConfig(enabled=True, ttl=ttl)  # type: ignore[arg-type]
    chosen = plan(messages, reuse=seen(messages, sightings), config=config, prices=prices)
    assert (chosen.after_messages == (0,)) is placed


def test_off_by_default() -> None:
    assert plan([sys(), user()], config=AutoBreakpointsConfig(), held=10_000) is None


@pytest.mark.parametrize(
    ("messages", "tools", "found"),
    [
        ([sys(), user()], None, None),
        (
            [{"role": "system", "content": LONG, "cache_control": {"type": "ephemeral"}}, user()],
            None,
            (0,),
        ),
        (
            [
                sys(),
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a"},
                        {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
                    ],
                },
            ],
            None,
            (1,),
        ),
        # A mark before the message's last part: counted at the message before (safe side).
        (
            [
                sys(),
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                        {"type": "text", "text": "b"},
                    ],
                },
            ],
            None,
            (0,),
        ),
        ([user()], [{**TOOL, "cache_control": {"type": "ephemeral"}}], (TOOLS,)),
    ],
)
def test_client_breakpoints(messages: list[Any], tools: Any, found: Any) -> None:
    assert client_breakpoints(messages, tools) == found


def test_the_clients_own_breakpoints_are_kept() -> None:
    marked = {"role": "system", "content": LONG, "cache_control": {"type": "ephemeral"}}
    chosen = plan([marked, user()], held=10_000)
    assert chosen.after_messages == (0,) and chosen.added is False
    assert chosen.reason == "the client's own"
    # Without auto breakpoints the client's are still recorded (the index needs them).
    assert plan([marked, user()], config=AutoBreakpointsConfig()).added is False

"""A coding agent's session through `/v1/messages` (issue 38): the anthropic SDK replays
the shape Claude-Code-style clients send — a system prompt and tools with cache marks,
extended thinking, tool_use / tool_result turns, an `anthropic-beta` header, a
`count_tokens` call before each turn — against an Anthropic-format backend and an
OpenAI-format one, whole and streamed.

The Anthropic-format engine checks what Anthropic's API checks: each earlier thinking
block's signature (and a redacted block's data) must come back unchanged, and a turn
that continues a tool call with thinking on must start with its thinking. So each turn
that succeeds there proves the previous answer reached the client, and came back, as the
backend wrote it. The OpenAI-format engine gets a reasoning effort for the thinking
budget and its reasoning comes back as thinking. Either way the gateway accounts for the
session as for any request: its token counters hold what the client was told.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic.types import Message, MessageParam, ToolParam

from tests.conftest import RunningGateway, StartEmulator, eventually
from tests.integration.mixed_fleet import (
    CLAUDE,
    HEADER,
    LOCAL,
    ROUTE,
    Fleet,
    Member,
    start_fleet,
)

REDACTED_TRIGGER = (
    "ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_"
    "46C9A13E193C177646C7398A98432ECCCE4C1253D5E2D82641AC0E52CC2876CB"
)
"""The string Anthropic documents for testing: the answer's thinking comes redacted."""
BETA = "interleaved-thinking-2025-05-14"
CACHED: dict[str, Any] = {"type": "ephemeral"}
SYSTEM: list[dict[str, Any]] = [
    {"type": "text", "text": "You are a careful coding agent working in a repository. " * 30},
    {"type": "text", "text": "Use the tools; keep answers short.", "cache_control": CACHED},
]
TOOLS: list[ToolParam] = [
    {
        "name": "read_file",
        "description": "Read a file of the repository",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
    {
        "name": "run_tests",
        "description": "Run the test suite",
        "input_schema": {"type": "object", "properties": {"filter": {"type": "string"}}},
        "cache_control": {"type": "ephemeral"},
    },
]
THINKING: dict[str, Any] = {"type": "enabled", "budget_tokens": 1024}
MAX_TOKENS = 1100
USER_TURNS = (
    "The parser drops the last line of a file. Find out why.",
    "Now run the tests. " + REDACTED_TRIGGER,
    "Summarise what you changed.",
)

BY_BACKEND = pytest.mark.parametrize("member", [CLAUDE, LOCAL], ids=["anthropic", "openai"])
BY_MODE = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


@pytest.fixture
async def fleet(start_emulator: StartEmulator, monkeypatch: pytest.MonkeyPatch) -> Fleet:
    """The mixed fleet, each engine with its provider's prompt cache: Anthropic's explicit
    one (at the client's marks), OpenAI's automatic one."""
    caches = {
        CLAUDE.name: {"prompt_cache": {"semantics": "explicit", "min_prefix_tokens": 64}},
        LOCAL.name: {"prompt_cache": {"semantics": "automatic", "min_prefix_tokens": 64}},
    }
    return await start_fleet(start_emulator, monkeypatch, engine_options=caches)


class Session:
    """One agent session against one backend: the conversation it builds turn by turn."""

    def __init__(self, sdk: anthropic.AsyncAnthropic, member: Member, stream: bool) -> None:
        self.sdk, self.member, self.stream = sdk, member, stream
        self.messages: list[MessageParam] = []
        self.answers: list[Message] = []
        self.counted: list[int] = []

    @property
    def headers(self) -> dict[str, str]:
        return {HEADER: self.member.tag, "anthropic-beta": BETA}

    async def turn(self) -> Message:
        """Count the prompt, then ask; the answer joins the conversation as it came."""
        counted = await self.sdk.messages.count_tokens(
            model=ROUTE,
            messages=self.messages,
            system=SYSTEM,  # type: ignore[arg-type]
            tools=TOOLS,
            thinking=THINKING,  # type: ignore[arg-type]
            extra_headers=self.headers,
        )
        self.counted.append(counted.input_tokens)
        options: dict[str, Any] = {
            "model": ROUTE,
            "max_tokens": MAX_TOKENS,
            "system": SYSTEM,
            "tools": TOOLS,
            "thinking": THINKING,
            "messages": self.messages,
            "extra_headers": self.headers,
        }
        if self.stream:
            async with self.sdk.messages.stream(**options) as events:
                answer = await events.get_final_message()
        else:
            answer = await self.sdk.messages.create(**options)
        self.answers.append(answer)
        content = [block.model_dump(exclude_none=True) for block in answer.content]
        self.messages.append({"role": "assistant", "content": content})  # type: ignore[typeddict-item]
        return answer

    def ask(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def tool_results(self, answer: Message) -> None:
        """A result for each call, the last one marked for the cache: the mark moves to
        the newest result, as agents move it (the API takes at most 4)."""
        for message in self.messages:
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    block.pop("cache_control", None)
        uses = [block for block in answer.content if block.type == "tool_use"]
        assert uses, "the backend called a tool"
        results: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": use.id, "content": f"output of {use.name}"}
            for use in uses
        ]
        results[-1]["cache_control"] = CACHED
        self.messages.append({"role": "user", "content": results})  # type: ignore[typeddict-item]


async def token_counts(gw: RunningGateway, member: Member) -> dict[str, int]:
    """The gateway's completion and cached prompt tokens of `member`, from `/metrics`."""
    text = (await gw.client.get("/metrics")).text
    counts = dict.fromkeys(("completion", "cached_prompt"), 0)
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if f'backend="{member.name}"' not in name:
            continue
        for kind in counts:
            if name.startswith(f"switchyard_{kind}_tokens_total{{"):
                counts[kind] += int(float(value))
    return counts


async def run_session(session: Session) -> None:
    """Each user turn: the agent calls a tool, gets its result, then answers in text."""
    for text in USER_TURNS:
        session.ask(text)
        called = await session.turn()
        assert called.stop_reason == "tool_use", called
        session.tool_results(called)
        answered = await session.turn()
        assert answered.stop_reason in ("end_turn", "max_tokens"), answered
        assert any(block.type == "text" for block in answered.content)


@BY_BACKEND
@BY_MODE
async def test_agent_session(
    claude_sdk: anthropic.AsyncAnthropic,
    gw: RunningGateway,
    fleet: Fleet,
    member: Member,
    stream: bool,
) -> None:
    session = Session(claude_sdk, member, stream)
    await run_session(session)
    answers = session.answers
    # Accounted as any request: the gateway's counters hold the usage the client was told.
    told = {
        "completion": sum(answer.usage.output_tokens for answer in answers),
        "cached_prompt": sum(answer.usage.cache_read_input_tokens or 0 for answer in answers),
    }

    async def counted() -> bool:
        return await token_counts(gw, member) == told

    await eventually(counted, f"the gateway counted {told} for {member.name}")
    assert len(answers) == 2 * len(USER_TURNS)
    assert all(answer.model == ROUTE for answer in answers), "the route's name, as ever"
    assert session.counted == sorted(session.counted) and session.counted[0] < session.counted[-1]
    later = [answer.usage.cache_read_input_tokens or 0 for answer in answers[1:]]
    assert all(read > 0 for read in later), "the cached prefix was read on every later turn"
    kinds = [[block.type for block in answer.content] for answer in answers]
    if member is CLAUDE:
        # Every answer opens with its thinking, as the Anthropic engine wrote it: signed,
        # redacted where the turn asked for that, and accepted back on the next turn.
        assert all(k[0] in ("thinking", "redacted_thinking") for k in kinds), kinds
        assert any(k[0] == "redacted_thinking" for k in kinds), kinds
        signed = [block for a in answers for block in a.content if block.type == "thinking"]
        assert signed and all(block.signature for block in signed)
        engine = fleet.engines[CLAUDE.name].runtime.stats
        assert engine.anthropic_betas[BETA] == len(answers), "the beta reached every turn"
    else:
        # The budget asked the OpenAI-format engine to reason; its reasoning came back as
        # thinking, which has no signature (an OpenAI API gives none).
        assert all(k[0] == "thinking" for k in kinds), kinds
        thinking = [a.content[0] for a in answers]
        assert all(block.type == "thinking" and block.thinking for block in thinking)

"""Coding-agent sessions with sub-agent fan-out, as a replayable trace.

Every session shares one large system prompt and one tools segment (OpenAI tool
definitions), then its own repository snapshot and task. Each turn is a request whose prompt
is the previous turn's prompt plus that turn's answer and a tool output (`parent` = previous
turn, `after` = think and tool time). In some sessions one turn spawns sub-agents: several
requests with that turn as their `parent`, each continuing its own branch for a few turns,
while the main session goes on from the same turn. Contexts stay within 6-16K tokens (a
branch stops before it would pass `max_context_tokens`). Sessions start as a Poisson process
at `rate_per_s / requests per session`, so that requests arrive at about `rate_per_s` per
second of nominal time.

Load arithmetic (seed 1, 1,200 requests: `python -m bench.workloads.load_estimate`; terms as
in the docstring of `bench.workloads.catalog`): prompts average ~11,350 tokens and ~200
output tokens. At 6 requests/s the nominal span is 246 s; with responses taking no time the
offline bounded longest-prefix router reuses 90.3 %: 1,200 x 11,350 x 0.097 / 246 s ≈ 5,400
uncached tokens/s, 34 % of the fleet's 4 x 4,000. But a turn waits for its parent's answer:
with every response taking 15 s the span is 419 s, up to ~70 of the 96 sessions run at once
(their contexts reach ~940K tokens together, against 400K of KV) and the same router reuses
72.2 %: 1,200 x 11,350 x 0.278 / 419 s ≈ 9,000 tokens/s, 56 % prefill; decode 1,200 x 200 x
0.5 ms / (4 x 419 s) ≈ 7 %; busy ~63 %, TPOT ≈ 15 ms / 0.37 ≈ 41 ms; ~111 % prefill in the
busiest minute. Seeds 2 and 3: busy 63 % and 83 % (the span hangs on the longest sessions),
~70 % over the three.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from bench.workloads.builder import Messages, TraceBuilder, poisson_starts
from bench.workloads.shared_prefix import BYTES_PER_TOKEN, text_of_tokens

TOOL_NAMES = (
    "read_file",
    "edit_file",
    "apply_patch",
    "list_directory",
    "search_code",
    "run_tests",
    "run_shell",
    "git_diff",
    "git_log",
    "open_url",
    "ask_user",
    "spawn_agent",
)
SYSTEM = "agent-sys"
TOOLS = "agent-tools"


@dataclass(frozen=True)
class AgentShape:
    seed: int = 1
    requests: int = 1200
    rate_per_s: float = 6.0
    """Requests per second of nominal time (sessions start at this / requests per session)."""
    system_tokens: int = 3000
    tool_description_tokens: int = 60
    repo_tokens: tuple[int, int] = (2000, 5000)
    task_tokens: tuple[int, int] = (20, 120)
    main_turns: tuple[int, int] = (4, 14)
    output_tokens: tuple[int, int] = (40, 360)
    """Each request's `max_tokens`; the answer its children see has as many tokens."""
    tool_output_tokens: tuple[int, int] = (100, 1500)
    think_s: tuple[float, float] = (0.5, 8.0)
    spawn_s: tuple[float, float] = (0.2, 2.0)
    fork_share: float = 0.6
    """Share of sessions in which one turn spawns sub-agents."""
    sub_agents: tuple[int, int] = (2, 4)
    sub_turns: tuple[int, int] = (2, 5)
    max_context_tokens: int = 16_000


@dataclass
class _Branch:
    """A line of turns: its session label, its last request and that request's prompt."""

    session: str
    messages: Messages
    last: str
    last_output_tokens: int
    turns: int = 1
    """Requests in the branch so far: the next one's number."""


def tool_definitions(rng: random.Random, description_tokens: int) -> str:
    """A JSON array of OpenAI function tools, one per name in `TOOL_NAMES`."""
    tools = []
    for name in TOOL_NAMES:
        argument = {"type": "string", "description": text_of_tokens(rng, 8)}
        parameters = {
            "type": "object",
            "properties": {"target": argument, "detail": {"type": "string"}},
            "required": ["target"],
        }
        function = {
            "name": name,
            "description": text_of_tokens(rng, description_tokens),
            "parameters": parameters,
        }
        tools.append({"type": "function", "function": function})
    return orjson.dumps(tools).decode()


def lines(shape: AgentShape) -> Iterator[dict[str, Any]]:
    """The meta line, then segments before first use and requests in dispatch order."""
    rng = random.Random(shape.seed)
    builder = TraceBuilder()
    system = "You are a coding agent working inside a repository.\n"
    builder.segment(SYSTEM, system + text_of_tokens(rng, shape.system_tokens))
    builder.segment(TOOLS, tool_definitions(rng, shape.tool_description_tokens))
    sessions = 0
    while len(builder.requests) < shape.requests:
        _session(builder, rng, shape, f"agent-{sessions}")
        sessions += 1
    span_s = shape.requests / shape.rate_per_s
    builder.start_roots(poisson_starts(rng, sessions, sessions / span_s))
    meta = {
        "name": f"agent-sessions-seed{shape.seed}",
        "description": "coding-agent sessions with sub-agent fan-out, 6-16K-token contexts",
        "family": "agent",
        "seed": shape.seed,
        "rate_per_s": shape.rate_per_s,
        "sessions": sessions,
    }
    yield from builder.lines(meta)


def _session(builder: TraceBuilder, rng: random.Random, shape: AgentShape, session: str) -> None:
    """One session's requests, sub-agents included, up to the trace's request count."""
    repo = f"Repository snapshot of {session}.\n" + text_of_tokens(
        rng, rng.randint(*shape.repo_tokens)
    )
    builder.segment(f"{session}-repo", repo)
    builder.segment(f"{session}-task", text_of_tokens(rng, rng.randint(*shape.task_tokens)))
    messages = [("system", (SYSTEM,)), ("user", (f"{session}-repo", f"{session}-task"))]
    output_tokens = rng.randint(*shape.output_tokens)
    first = builder.request(f"{session}-t0", session, messages, output_tokens, tools=TOOLS)
    main = _Branch(session, messages, first, output_tokens)
    turns = rng.randint(*shape.main_turns)
    forks = rng.random() < shape.fork_share and turns >= 3
    fork_at = rng.randrange(1, turns - 1) if forks else -1
    for turn in range(1, turns):
        if turn == fork_at:
            _spawn_sub_agents(builder, rng, shape, main)
        if not _next_turn(builder, rng, shape, main, rng.uniform(*shape.think_s)):
            return


def _spawn_sub_agents(
    builder: TraceBuilder, rng: random.Random, shape: AgentShape, parent: _Branch
) -> None:
    """Sub-agents forking from `parent`'s last turn, each running its own few turns."""
    for k in range(rng.randint(*shape.sub_agents)):
        sub = _Branch(
            f"{parent.session}.sub{parent.turns}-{k}",
            parent.messages,
            parent.last,
            parent.last_output_tokens,
            turns=0,
        )
        task = text_of_tokens(rng, rng.randint(*shape.task_tokens))
        after_s = rng.uniform(*shape.spawn_s)
        if not _next_turn(builder, rng, shape, sub, after_s, user_text=task):
            return
        for _ in range(rng.randint(*shape.sub_turns) - 1):
            if not _next_turn(builder, rng, shape, sub, rng.uniform(*shape.think_s)):
                break


def _next_turn(
    builder: TraceBuilder,
    rng: random.Random,
    shape: AgentShape,
    branch: _Branch,
    after_s: float,
    user_text: str | None = None,
) -> bool:
    """Add the turn after `branch.last`: its prompt, that turn's answer, and `user_text`
    (by default a tool output). False, adding nothing, when the trace is full or the
    context would pass `max_context_tokens`."""
    if len(builder.requests) >= shape.requests:
        return False
    if user_text is None:
        user_tokens = rng.randint(*shape.tool_output_tokens)
    else:
        user_tokens = len(user_text) // BYTES_PER_TOKEN
    grown = builder.prompt_tokens(branch.messages, TOOLS) + branch.last_output_tokens + user_tokens
    if grown > shape.max_context_tokens:
        return False
    # The answer to a turn is one segment, so siblings forking from it share it.
    answer = builder.segment_made(
        f"{branch.last}-answer", lambda: text_of_tokens(rng, branch.last_output_tokens)
    )
    request_id = f"{branch.session}-t{branch.turns}"
    user = builder.segment(f"{request_id}-in", user_text or text_of_tokens(rng, user_tokens))
    messages = [*branch.messages, ("assistant", (answer,)), ("user", (user,))]
    output_tokens = rng.randint(*shape.output_tokens)
    builder.request(
        request_id,
        branch.session,
        messages,
        output_tokens,
        parent=branch.last,
        after_s=after_s,
        tools=TOOLS,
    )
    branch.messages, branch.last = messages, request_id
    branch.last_output_tokens, branch.turns = output_tokens, branch.turns + 1
    return True

"""Multi-turn chat as a replayable trace: a few system prompts shared by many users.

Each conversation picks one of `system_prompts` shared system prompts and runs 2-12 turns; a
turn's prompt is the previous turn's prompt plus that turn's answer (as many tokens as it
asked for) and the user's next message, sent after the user's think time. Contexts grow from
a few hundred tokens to a few thousand. Conversations start as a Poisson process at
`rate_per_s / turns per conversation`, so that requests arrive at about `rate_per_s` per
second of nominal time.

Load arithmetic (seed 1, 1,200 requests: `python -m bench.workloads.load_estimate`; terms as
in the docstring of `bench.workloads.catalog`): prompts average ~3,650 tokens, ~260 output
tokens. Conversations start at 16 requests/s (~175 of them within 75 s), but the span cannot
be shorter than the longest conversation: 12 turns x (11 s think + 15 s response) ≈ 310 s.
With responses taking 15 s the span is 377 s and the offline bounded longest-prefix router
reuses 71.2 %: 1,200 x 3,650 x 0.288 / 377 s ≈ 3,350 uncached tokens/s, 21 % prefill; decode
1,200 x 260 x 0.5 ms / (4 x 377 s) ≈ 10 %; busy ~31 % (TPOT ≈ 22 ms; seeds 2 and 3: 32 % and
29 %). Round-robin reuses only 32 % at that pace (little more than the system prompts): ~49
% prefill. So chat is the matrix's light cell: the 2-12 turns, think times and context sizes
of the issue cannot keep this fleet's prefill at 60-80 % with 1,200 requests, and a chat
trace that did would bring ~700 output tokens/s per engine with it: 35 % more of the
engines' time, busy past 100 %. What it tests is stickiness under KV pressure (up to ~150
conversations at once, whose contexts reach ~830K tokens together, against 400K of KV)
without piling conversations on one engine.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bench.workloads.builder import TraceBuilder, poisson_starts
from bench.workloads.shared_prefix import text_of_tokens


@dataclass(frozen=True)
class ChatShape:
    seed: int = 1
    requests: int = 1200
    rate_per_s: float = 16.0
    """Requests per second of nominal time (conversations start at this / turns each)."""
    system_prompts: int = 4
    system_tokens: tuple[int, int] = (300, 1000)
    turns: tuple[int, int] = (2, 12)
    user_tokens: tuple[int, int] = (20, 800)
    output_tokens: tuple[int, int] = (30, 500)
    think_s: tuple[float, float] = (2.0, 20.0)


def lines(shape: ChatShape) -> Iterator[dict[str, Any]]:
    """The meta line, then segments before first use and requests in dispatch order."""
    rng = random.Random(shape.seed)
    builder = TraceBuilder()
    for k in range(shape.system_prompts):
        lead = f"You are assistant persona {k}, helpful and concise.\n"
        text = lead + text_of_tokens(rng, rng.randint(*shape.system_tokens))
        builder.segment(f"chat-sys{k}", text)
    conversations = 0
    while len(builder.requests) < shape.requests:
        left = shape.requests - len(builder.requests)
        _conversation(builder, rng, shape, conversations, _turns(rng, shape, left))
        conversations += 1
    span_s = shape.requests / shape.rate_per_s
    builder.start_roots(poisson_starts(rng, conversations, conversations / span_s))
    meta = {
        "name": f"chat-seed{shape.seed}",
        "description": (
            f"multi-turn chat, {shape.turns[0]}-{shape.turns[1]} turns, "
            f"{shape.system_prompts} shared system prompts"
        ),
        "family": "chat",
        "seed": shape.seed,
        "rate_per_s": shape.rate_per_s,
        "sessions": conversations,
    }
    yield from builder.lines(meta)


def _turns(rng: random.Random, shape: ChatShape, left: int) -> int:
    """Turns for the next conversation, within what is left and never leaving one over
    (a one-turn conversation would be outside the shape)."""
    low, high = shape.turns
    turns = min(rng.randint(low, high), left)
    if left - turns == 1:
        turns = turns - 1 if turns > low else turns + 1
    return turns


def _conversation(
    builder: TraceBuilder, rng: random.Random, shape: ChatShape, number: int, turns: int
) -> None:
    session = f"chat-{number}"
    system = f"chat-sys{rng.randrange(shape.system_prompts)}"
    user = builder.segment(f"{session}-u0", text_of_tokens(rng, rng.randint(*shape.user_tokens)))
    messages = [("system", (system,)), ("user", (user,))]
    output_tokens = rng.randint(*shape.output_tokens)
    parent = builder.request(f"{session}-t0", session, messages, output_tokens)
    for turn in range(1, turns):
        answer = builder.segment(f"{session}-a{turn - 1}", text_of_tokens(rng, output_tokens))
        question = text_of_tokens(rng, rng.randint(*shape.user_tokens))
        user = builder.segment(f"{session}-u{turn}", question)
        messages = [*messages, ("assistant", (answer,)), ("user", (user,))]
        output_tokens = rng.randint(*shape.output_tokens)
        parent = builder.request(
            f"{session}-t{turn}",
            session,
            messages,
            output_tokens,
            parent=parent,
            after_s=rng.uniform(*shape.think_s),
        )

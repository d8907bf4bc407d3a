"""Multi-turn chat sized for a small real model: SmolLM2-135M on one CPU thread per replica.

A shared system prompt (150 tokens), then conversations that each open with their own
context (notes the user pastes, 120-240 tokens) and a question, and grow every turn by the
answer (as many tokens as the turn asked for: 16-32) and the next question (10-30), for up
to `turns` turns or until the next prompt would pass `max_prompt_tokens` (640). Prompts run
from ~300 to 640 tokens, so each fits a 2,048-token window with its output. Conversations
start a few seconds apart and think between turns, so all are active at once and a router
that ignores the cache scatters their turns over the replicas.

Sized against llama-server's bounded host-memory prompt cache (`cache_ram_mib`, 64 MiB by
default): SmolLM2-135M keeps 22.5 KiB of KV per token, so a conversation at its longest
(~670 tokens with its answer) takes ~15 MiB, and a replica holds its slot plus four such
prompts: five conversations. Two replicas hold all 8 conversations when each stays on one
replica, but not when every replica sees all 8.

Token counts are exact for this generator's text in SmolLM2's tokenizer (GPT-2 style BPE):
every word of `WORDS` is one token with its leading space, and so is each full stop; the
chat template adds about `TEMPLATE_TOKENS_PER_MESSAGE` per message and
`TEMPLATE_TOKENS_PER_PROMPT` per prompt (the engine counts up to ~1 token more per turn).

Size (seed 1): 42 requests, 20,700 prompt tokens, of which at least 4,000 must be
evaluated (first turns, each turn's new messages): ~1 minute of prefill on two replicas at
the 50-70 tokens/s each evaluates while both run on this machine's two shared cores.

    python -m bench.workloads.real_chat --out /tmp/real-chat.jsonl --seed 1
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.workloads.builder import Messages, TraceBuilder, seeded, write_lines

# Each is a single token with a leading space in SmolLM2's vocabulary (checked against
# llama-server's /tokenize); lower case, because a capital letter changes the token.
_VOCABULARY = """
    the of and to in is for on with that this it as are be by from at or was we can not
    but have has more will all one they their which when what there so if about other some
    time these may would into than then them only also new most over such like after first
    well way many where our before any should each just those used both make through while
    long own could very same under still need even here found work place back because
    between old part great small large high last early point group case world area system
    day year home life hand order state city water food book game music story house school
    family report plan price market team data model number line answer question idea note
    detail project garden river road train ship bridge window door table paper letter phone
    light sound color field paint stone metal glass wood cloth rain snow wind storm cloud
    summer winter spring morning evening night week month history science travel weather
    recipe dinner lunch coffee bread apple orange lemon sugar salt butter cheese fish chicken
    soup rice bean corn milk tea cake street village forest mountain island lake ocean desert
    valley farm animal horse dog cat bird tree flower grass seed fruit leaf root plant doctor
    teacher student farmer driver writer artist player friend mother father child people
    person king queen army war peace law court money bank trade shop store office room
    kitchen floor wall roof engine car bus truck plane boat bike map list card box bag cup
    plate bottle chair bed lamp clock watch key lock gift film show art song dance sport
    ball race club party meeting class lesson test exam grade rule fact truth reason result
    change problem choice chance risk cost value level size shape form style type kind sort
    side top bottom front end start center edge corner
"""
WORDS: tuple[str, ...] = tuple(_VOCABULARY.split())
TEMPLATE_TOKENS_PER_MESSAGE = 5
"""`<|im_start|>`, the role, a newline; `<|im_end|>`, a newline."""
TEMPLATE_TOKENS_PER_PROMPT = 4
"""The assistant turn's opening (`<|im_start|>assistant` and a newline), and one more."""
SENTENCE_WORDS = (6, 14)


@dataclass(frozen=True)
class RealChatShape:
    seed: int = 1
    conversations: int = 8
    turns: int = 8
    """At most; a conversation ends early rather than pass `max_prompt_tokens`."""
    system_tokens: int = 150
    context_tokens: tuple[int, int] = (120, 240)
    question_tokens: tuple[int, int] = (10, 30)
    output_tokens: tuple[int, int] = (16, 32)
    max_prompt_tokens: int = 640
    stagger_s: float = 6.0
    """Conversation k starts at k x this, give or take half of it (nominal seconds)."""
    think_s: tuple[float, float] = (4.0, 12.0)


def sentences(rng: random.Random, tokens: int) -> str:
    """Exactly `tokens` tokens of sentences: words from `WORDS`, each sentence ending in a
    full stop (the last one too, unless it would follow another). Starts with a space, so
    that segments join without a token merging across the seam."""
    parts: list[str] = []
    left = rng.randint(*SENTENCE_WORDS)
    for i in range(tokens):
        last = i == tokens - 1 and bool(parts) and parts[-1] != "."
        if left == 0 or last:
            parts.append(".")
            left = rng.randint(*SENTENCE_WORDS)
        else:
            parts.append(" " + rng.choice(WORDS))
            left -= 1
    return "".join(parts)


def text_tokens(text: str) -> int:
    """Tokens of a text made by `sentences`: one per word, one per full stop."""
    return len(text.split()) + text.count(".")


def prompt_tokens(builder: TraceBuilder, messages: Messages) -> int:
    """The prompt's tokens as the engine counts them, template included (estimate)."""
    content = sum(text_tokens(builder.texts[s]) for _, ids in messages for s in ids)
    return content + TEMPLATE_TOKENS_PER_MESSAGE * len(messages) + TEMPLATE_TOKENS_PER_PROMPT


def lines(shape: RealChatShape) -> Iterator[dict[str, Any]]:
    """The meta line, then segments before first use and requests in dispatch order."""
    builder = TraceBuilder()
    system = builder.segment("real-sys", sentences(seeded(shape.seed, "sys"), shape.system_tokens))
    for number in range(shape.conversations):
        _conversation(builder, seeded(shape.seed, "conversation", number), shape, system, number)
    rng = seeded(shape.seed, "starts")
    jitter = shape.stagger_s / 2
    starts = [
        k * shape.stagger_s + rng.uniform(-jitter, jitter) for k in range(shape.conversations)
    ]
    builder.start_roots([max(0.0, start) for start in starts])
    meta = {
        "name": f"real-chat-seed{shape.seed}",
        "description": (
            f"multi-turn chat for a small real model: {shape.conversations} conversations of "
            f"up to {shape.turns} turns, one shared system prompt, prompts up to "
            f"{shape.max_prompt_tokens} tokens"
        ),
        "family": "chat",
        "seed": shape.seed,
        "sessions": shape.conversations,
    }
    yield from builder.lines(meta)


def _conversation(
    builder: TraceBuilder, rng: random.Random, shape: RealChatShape, system: str, number: int
) -> None:
    session = f"real-{number}"
    context = builder.segment(f"{session}-ctx", sentences(rng, rng.randint(*shape.context_tokens)))
    question = builder.segment(f"{session}-q0", sentences(rng, rng.randint(*shape.question_tokens)))
    messages: list[tuple[str, Sequence[str]]] = [
        ("system", (system,)),
        ("user", (context, question)),
    ]
    size, output = prompt_tokens(builder, messages), rng.randint(*shape.output_tokens)
    parent = builder.request(f"{session}-t0", session, messages, output)
    for turn in range(1, shape.turns):
        answer = sentences(rng, output)
        asked = sentences(rng, rng.randint(*shape.question_tokens))
        think_s = rng.uniform(*shape.think_s)
        size += text_tokens(answer) + text_tokens(asked) + 2 * TEMPLATE_TOKENS_PER_MESSAGE
        if size > shape.max_prompt_tokens:
            return
        messages = [
            *messages,
            ("assistant", (builder.segment(f"{session}-a{turn - 1}", answer),)),
            ("user", (builder.segment(f"{session}-q{turn}", asked),)),
        ]
        output = rng.randint(*shape.output_tokens)
        parent = builder.request(
            f"{session}-t{turn}", session, messages, output, parent=parent, after_s=think_s
        )


def main(argv: Sequence[str] | None = None) -> int:
    defaults = RealChatShape()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--conversations", type=int, default=defaults.conversations)
    parser.add_argument("--turns", type=int, default=defaults.turns, help="at most, each")
    args = parser.parse_args(argv)
    shape = RealChatShape(seed=args.seed, conversations=args.conversations, turns=args.turns)
    write_lines(args.out, lines(shape))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

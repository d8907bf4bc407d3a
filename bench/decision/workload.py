"""Workload of the decision-time benchmark: real prose, growing conversations, a 16-engine fleet.

Prompt text is drawn paragraph by paragraph from the Python documentation that ships with
the interpreter (`pydoc_data.topics`: English prose with code samples), so that tiktoken
costs what it costs on real text; a repeated character would tokenise several times faster.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml

from gateway.cli import embedded_config_path
from gateway.config.root import Config, parse_config
from gateway.prefix.token_count import TokenCounter

ROUTE = "default"
PROFILE = "cache-aware"
"""The bundled cache-aware profile, taken as it is from the embedded config."""

_SYSTEM_TOKENS = 1_000
"""System prompt shared by every conversation (capped at an eighth of the prompt)."""
_QUESTION_TOKENS = (30, 200)
_REPLY_TOKENS = (100, 400)
_HISTORY_TOKENS = (300, 3_000)
_ROLES = ("assistant", "user")


@functools.cache
def paragraphs() -> tuple[str, ...]:
    """About 2,000 paragraphs (440K characters) of the Python documentation."""
    from pydoc_data.topics import topics

    return tuple(
        p.strip() for text in topics.values() for p in text.split("\n\n") if len(p.strip()) >= 40
    )


class TextSource:
    """Random paragraphs of real text, cut to a length in characters."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def take(self, chars: int) -> str:
        pool, parts, size = paragraphs(), [], 0
        while size < chars:
            part = self._rng.choice(pool)
            parts.append(part)
            size += len(part) + 2
        return "\n\n".join(parts)[:chars]


def chars_per_token(counter: TokenCounter, samples: int = 16) -> float:
    """Characters per token of this text under the gateway's counter (exact encodings)."""
    source = TextSource(random.Random(0))
    texts = [source.take(8_000) for _ in range(samples)]
    return sum(map(len, texts)) / sum(counter.count(t) for t in texts)


@dataclass(slots=True)
class Conversation:
    """One chat: its messages so far, and how many requests it has sent."""

    messages: list[dict[str, str]]
    turns: int
    sent: int = 0
    rng: random.Random = field(default_factory=random.Random)


class ConversationFactory:
    """Conversations whose first request has about `prompt_tokens` tokens.

    Each later request repeats every earlier message and adds the assistant's reply to the
    previous request plus a new user question, as a chat client does; the prompt therefore
    grows a few hundred tokens a turn beyond `prompt_tokens`.
    """

    def __init__(self, prompt_tokens: int, turns: int, chars_per_token: float, seed: int) -> None:
        self._cpt = chars_per_token
        self._target_chars = int(prompt_tokens * chars_per_token)
        self._turns = turns
        self._seed = seed
        system_tokens = min(_SYSTEM_TOKENS, prompt_tokens // 8)
        self.system = "You are a careful assistant. " + TextSource(random.Random(seed)).take(
            self._chars(system_tokens)
        )

    def start(self, ident: int) -> Conversation:
        """A new conversation: the shared system prompt, then a long document and a question."""
        rng = random.Random(f"{self._seed}/{ident}")
        return Conversation(self._opening(rng, self.system, ident), self._turns, rng=rng)

    def cold(self, ident: int) -> Conversation:
        """A conversation sharing nothing with any other, its system prompt included."""
        rng = random.Random(f"{self._seed}/cold/{ident}")
        system = f"[tenant {ident}] You are a careful assistant. " + TextSource(rng).take(
            len(self.system)
        )
        return Conversation(self._opening(rng, system, ident), 1, rng=rng)

    def advance(self, conversation: Conversation) -> bool:
        """Count the request just sent; add its reply and the next question, if any is left."""
        conversation.sent += 1
        if conversation.sent >= conversation.turns:
            return False
        source, rng = TextSource(conversation.rng), conversation.rng
        reply = source.take(self._chars(rng.randint(*_REPLY_TOKENS)))
        question = source.take(self._chars(rng.randint(*_QUESTION_TOKENS)))
        conversation.messages.append({"role": "assistant", "content": reply})
        conversation.messages.append({"role": "user", "content": question + "?"})
        return True

    def _opening(self, rng: random.Random, system: str, ident: int) -> list[dict[str, str]]:
        """System prompt, then earlier exchanges up to the target size, then a question.

        The history comes as messages of 300 to 3,000 tokens, as a long chat or an agent's
        transcript does; each is short enough to be encoded exactly (rather than estimated)
        when it is new, so a never-seen prompt costs the most tokenising it can.
        """
        source = TextSource(rng)
        question = source.take(self._chars(rng.randint(*_QUESTION_TOKENS))) + "?"
        messages = [{"role": "system", "content": system}]
        room = self._target_chars - len(system) - len(question)
        text = f"Conversation {ident}. Read this first.\n\n"
        while room > 0:
            chunk = text + source.take(min(room, self._chars(rng.randint(*_HISTORY_TOKENS))))
            messages.append({"role": _ROLES[len(messages) % 2], "content": chunk})
            room -= len(chunk)
            text = ""
        messages.append({"role": "user", "content": question})
        return messages

    def _chars(self, tokens: int) -> int:
        return int(tokens * self._cpt)


def chat_body(conversation: Conversation, max_tokens: int) -> bytes:
    """The request a client would send for this conversation's next turn."""
    body: dict[str, Any] = {
        "model": ROUTE,
        "messages": conversation.messages,
        "max_tokens": max_tokens,
        "stream": True,
    }
    return orjson.dumps(body)


def fleet_config(backends: int, capacity_tokens: int) -> Config:
    """The embedded config with its first engine copied `backends` times behind one route.

    Every policy and profile stays as bundled; the route uses the cache-aware profile.
    """
    data = yaml.safe_load(embedded_config_path().read_text(encoding="utf-8"))
    template = data["backends"][0]
    template["cache"]["capacity_tokens"] = capacity_tokens
    template.get("emulator", {})["kv_capacity_tokens"] = capacity_tokens
    names = [f"engine-{i:02d}" for i in range(backends)]
    data["backends"] = [{**template, "name": name} for name in names]
    data["routes"] = [
        {"name": ROUTE, "model": template["models"][0], "backends": names, "profile": PROFILE}
    ]
    data.setdefault("health", {})["active_probes"] = False
    # Decisions only: no demo traffic of its own, no records written to a database.
    data.pop("demo", None)
    data.pop("store", None)
    return parse_config(data, source=f"embedded config x {backends} backends")

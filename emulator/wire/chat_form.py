"""The engine's chat form, as the formats that are not OpenAI's build it from their requests.

Anthropic's and Gemini's requests differ in how they say it, not in what the engine reads:
a system prompt, then each turn's tool results as ``tool`` messages (ahead of the rest of
the turn, as OpenAI wants them right after the calls they answer) and its text and tool
calls as one message; tools as functions with JSON schemas.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import orjson

from emulator.wire.api_format import Json


def chat_messages(system: str, turns: Iterable[list[Json]]) -> list[Json]:
    """The system message, when there is a system prompt, then every turn's messages."""
    chat: list[Json] = [{"role": "system", "content": system}] if system else []
    for turn in turns:
        chat.extend(turn)
    return chat


def chat_turn(
    role: str, results: Sequence[str], texts: Sequence[str], calls: list[Json]
) -> list[Json]:
    """One turn: its tool results' texts as tool messages, then its text and tool calls as
    one message of ``role``, which a turn with nothing else in it also gets."""
    messages: list[Json] = [{"role": "tool", "content": result} for result in results]
    if texts or calls or not messages:
        message: Json = {"role": role, "content": "".join(texts)}
        if calls:
            message["tool_calls"] = calls
        messages.append(message)
    return messages


def tool_call(call_id: object, name: object, arguments: object) -> Json:
    """A call with its arguments (the tool's input object, none for ``{}``) as JSON text."""
    text = orjson.dumps(arguments or {}).decode()
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def function_tool(name: object, parameters: object) -> Json:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}

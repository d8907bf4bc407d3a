"""The oracle: what a strong model answers, for requests whose right answer the prompt holds.

With ``answers="oracle"`` (``EmulatorOptions``) the engine stands in for a frontier model
on checkable work, so that a benchmark can grade a stronger tier as right where a weaker
one fails. It reads the chat form of a request (every format's; the prompt is its
messages' text, unaffected by ``truncate_context_tokens``) and decides, in this order:

1. a tool call, when the engine calls one (``openai_request.py`` decides *whether*:
   offered tools on a user's turn, or forced): a function ``tool_choice`` names; else the
   declared function the last user message names first (its name as a word); else the
   first. Its arguments fill the function's schema from the values the prompt states
   (``stated_values.py``), the schema's examples where it states none;
2. a JSON-schema answer: the schema's document filled the same way;
3. a short question's answer (``short_answers.py``: arithmetic, a code looked up in the
   prompt) as the whole text, or as ``{"answer": ...}`` under ``json_object``;
4. nothing: the engine writes its usual words (or a ``json_object``'s filler).

After a tool's result the engine answers in text as before (the oracle only answers it
when it holds a short question). Needle retrieval and a ``loop_rate`` loop come first; a
``malformed_tool_call_rate`` fault still breaks the oracle's call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from emulator.content.generation import KnownCall
from emulator.content.short_answers import short_answer
from emulator.content.stated_values import fill_schema
from emulator.request_parsing import GenerationRequest, ToolSpec, message_text


@dataclass(frozen=True, slots=True)
class OracleAnswer:
    """The text or the tool call the oracle knows; neither: the engine's usual answer."""

    text: str | None = None
    call: KnownCall | None = None


def oracle_answer(body: Mapping[str, Any], generation: GenerationRequest) -> OracleAnswer:
    """The oracle's answer to the chat-form request ``body``, read as ``generation``."""
    raw = body.get("messages")
    messages = [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []
    prompt = "\n".join(message_text(message) for message in messages)
    question = _last_user_text(messages)
    if generation.tool is not None:
        return OracleAnswer(call=_call(body, generation.tool, question, prompt))
    if generation.json_schema is not None:
        return OracleAnswer(text=_json(fill_schema(generation.json_schema, prompt)))
    answer = short_answer(question, prompt)
    if answer is not None and generation.json_object:
        return OracleAnswer(text=_json({"answer": answer}))
    return OracleAnswer(text=answer)


def _last_user_text(messages: Sequence[dict[str, Any]]) -> str:
    last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    return message_text(last) if last is not None else ""


def _call(body: Mapping[str, Any], tool: ToolSpec, question: str, prompt: str) -> KnownCall:
    # A named tool_choice is an object; "auto" and "required" leave the choice to the model.
    if not isinstance(body.get("tool_choice"), Mapping):
        tool = _named_in(question, tool, _functions(body))
    arguments = fill_schema(tool.parameters, prompt)
    return KnownCall(tool, arguments if isinstance(arguments, dict) else {})


def _named_in(question: str, tool: ToolSpec, functions: Mapping[str, object]) -> ToolSpec:
    """The declared function ``question`` names first, else ``tool``."""
    mentions = []
    for name in functions:
        found = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", question, re.IGNORECASE)
        if found is not None:
            mentions.append((found.start(), name))
    if not mentions:
        return tool
    name = min(mentions)[1]
    return ToolSpec(name, functions[name] or {"type": "object"}, tool.declared)


def _functions(body: Mapping[str, Any]) -> dict[str, object]:
    """Each declared function's name and parameters, from the chat form's ``tools``."""
    functions: dict[str, object] = {}
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            functions.setdefault(function["name"], function.get("parameters"))
    return functions


def _json(document: object) -> str:
    return orjson.dumps(document if document is not None else {}).decode()

"""Needle retrieval: answers "the secret value for key K" from the prompt the engine sees.

Not a fault but a capability, so that a long-context probe means something against the
emulator: an engine that silently truncates its context loses needles placed early.
"""

from __future__ import annotations

import re
from typing import Any

from emulator.request_parsing import message_text

NOT_FOUND = "I do not know."
_QUESTION = re.compile(r'Reply with the secret value for key "([A-Za-z0-9_-]+)"')


def needle_key(body: dict[str, Any]) -> str | None:
    """The key the last user message asks for, if it asks for one."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    last = next(
        (m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"), None
    )
    match = _QUESTION.search(message_text(last)) if last is not None else None
    return match.group(1) if match else None


def needle_answer(key: str, visible_text: str) -> str:
    """The value stated for ``key`` in ``visible_text`` (the last statement wins)."""
    statement = re.compile(rf'The secret value for key "{re.escape(key)}" is "([^"]*)"\.')
    values = statement.findall(visible_text)
    return str(values[-1]) if values else NOT_FOUND

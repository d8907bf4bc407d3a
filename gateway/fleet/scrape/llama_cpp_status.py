"""Reading what llama.cpp's llama-server says of itself: its slots (`GET /slots`) and the
context window of one slot (`GET /props`).

The shapes, as a llama-server of 2025 answers (one slot, `n_ctx` 2048):

- `/slots`: `[{"id": 0, "n_ctx": 2048, "speculative": false, "is_processing": false}]`;
  a slot that has served also carries `id_task`, `n_prompt_tokens`, `params` and
  `next_token`. One entry per slot (`--parallel`); `is_processing` marks a busy one.
  Without `--slots` the server answers 501, while loading 503.
- `/props`: `{"default_generation_settings": {"n_ctx": 2048, "params": {...}},
  "total_slots": 1, "model_path": ..., "chat_template": ..., "build_info": ...}`; its
  `n_ctx` is per slot (the server's `--ctx-size` split over `--parallel`), what one
  sequence may hold.

Parsing is pure; anything else (a missing field, a wrong type) is no reading, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class EngineSlots:
    """One `/slots` reading."""

    total: int
    busy: int
    """Slots with `is_processing`: requests the engine is running, every client's."""
    n_ctx: int | None
    """The smallest slot's context window in tokens; None when no slot says."""


def parse_slots(body: bytes) -> EngineSlots | None:
    """The slots in a `/slots` answer, or None if it is not a list of slot objects."""
    document = _json(body)
    if not isinstance(document, list) or not document:
        return None
    slots = [slot for slot in document if isinstance(slot, dict)]
    if len(slots) != len(document):
        return None
    windows = [w for w in (_positive_int(slot.get("n_ctx")) for slot in slots) if w is not None]
    return EngineSlots(
        total=len(slots),
        busy=sum(1 for slot in slots if slot.get("is_processing") is True),
        n_ctx=min(windows) if windows else None,
    )


def parse_context_window(body: bytes) -> int | None:
    """`default_generation_settings.n_ctx` of a `/props` answer: tokens per slot."""
    document = _json(body)
    settings = document.get("default_generation_settings") if isinstance(document, dict) else None
    return _positive_int(settings.get("n_ctx")) if isinstance(settings, dict) else None


def _json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _positive_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None

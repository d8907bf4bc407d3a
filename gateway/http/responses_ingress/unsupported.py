"""What a stateless gateway refuses of a Responses request, before its shape is checked.

Nothing is stored, so what reads or writes OpenAI's server-side state is refused:
`previous_response_id`, `store: true`, `background`, `conversation`, stored `prompt`s and
`item_reference` inputs. No backend runs OpenAI's built-in tools (web search, file search,
computer use, code interpreter, MCP, ...), so they are refused in `tools`, `tool_choice`
and as input items, as are inputs that name files of OpenAI's Files API, audio, and images
in other messages than the user's (chat's other roles hold text only). Each refusal is a
400 `invalid_request_error` whose `param` names the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from gateway.config.bounds import check_count
from gateway.errors import InvalidRequest
from gateway.http.responses_ingress.input_items import ITEM_TYPES

STATELESS = "this gateway is stateless and keeps no responses or conversations"

STATEFUL_FIELDS: Mapping[str, str] = MappingProxyType(
    {
        "previous_response_id": "send the whole conversation as `input` instead",
        "conversation": "send the whole conversation as `input` instead",
        "background": "send the request without it (and stream it, if it is long)",
        "prompt": "send the prompt's text as `instructions` and `input` instead",
    }
)
"""Fields refused when set (not null, not false), with what to do instead."""

_PART_LISTS = ("content", "output")
"""Where an input item keeps its parts: a message's content, a call output's output."""


def refuse_unsupported(document: dict[str, Any], max_items: int) -> None:
    """Raise InvalidRequest for the first feature the gateway cannot serve."""
    for name, instead in STATEFUL_FIELDS.items():
        if document.get(name) not in (None, False):
            raise InvalidRequest(f"{name} is not supported: {STATELESS}; {instead}", param=name)
    if document.get("store") is True:
        raise InvalidRequest(
            f"store: true is not supported: {STATELESS}; send store: false or leave it out",
            param="store",
        )
    _refuse_hosted_tools(document.get("tools"))
    _refuse_tool_choice(document.get("tool_choice"))
    items = document.get("input")
    if isinstance(items, list):
        check_count("input", len(items), max_items)
        for position, item in enumerate(items):
            if isinstance(item, dict):
                _refuse_item(f"input.{position}", item)


def _refuse_hosted_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        return
    for position, tool in enumerate(tools):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if isinstance(kind, str) and kind != "function":
            raise InvalidRequest(
                f"tools.{position}.type: built-in tool {kind!r} is not supported: this gateway "
                "runs no hosted tools; only tools of type 'function' are",
                param=f"tools.{position}.type",
            )


def _refuse_tool_choice(choice: Any) -> None:
    kind = choice.get("type") if isinstance(choice, dict) else None
    if isinstance(kind, str) and kind != "function":
        raise InvalidRequest(
            f"tool_choice: {kind!r} is not supported; use 'auto', 'none', 'required' or "
            "{'type': 'function', 'name': ...}",
            param="tool_choice",
        )


def _refuse_item(where: str, item: dict[str, Any]) -> None:
    kind = item.get("type", "message")
    if kind == "item_reference":
        raise InvalidRequest(
            f"{where}: item_reference is not supported: {STATELESS}; send the item itself",
            param=f"{where}.type",
        )
    if isinstance(kind, str) and kind not in ITEM_TYPES:
        raise InvalidRequest(
            f"{where}: {kind!r} items are not supported: this gateway runs no built-in tools; "
            f"input items may be {', '.join(sorted(ITEM_TYPES))}",
            param=f"{where}.type",
        )
    text_only = kind == "message" and item.get("role") != "user"
    for field in _PART_LISTS:
        parts = item.get(field)
        if isinstance(parts, list):
            for position, part in enumerate(parts):
                if isinstance(part, dict):
                    _refuse_part(f"{where}.{field}.{position}", part, text_only)


def _refuse_part(where: str, part: dict[str, Any], text_only: bool) -> None:
    kind = part.get("type")
    if text_only and kind == "input_image":
        raise InvalidRequest(
            f"{where}: only user messages may hold images (chat's other roles hold text)",
            param=f"{where}.type",
        )
    if kind in ("input_file", "input_audio"):
        raise InvalidRequest(
            f"{where}: {kind} parts are not supported by this gateway; send text or images",
            param=f"{where}.type",
        )
    if kind == "input_image" and part.get("file_id") is not None and not part.get("image_url"):
        raise InvalidRequest(
            f"{where}.file_id: images by file id are not supported (this gateway has no "
            "Files API); send image_url, a URL or a data: URL",
            param=f"{where}.file_id",
        )

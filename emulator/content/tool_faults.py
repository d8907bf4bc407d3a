"""Malformed tool calls, as degraded providers send them: broken JSON, names, or schemas."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from emulator.request_parsing import ToolSpec

ToolFaultKind = Literal["invalid_json", "undeclared_name", "schema_violation"]
TOOL_FAULT_KINDS: tuple[ToolFaultKind, ...] = (
    "invalid_json",
    "undeclared_name",
    "schema_violation",
)


@dataclass(frozen=True, slots=True)
class ToolFault:
    """How to corrupt one tool call; ``pick`` chooses which property a violation touches."""

    kind: ToolFaultKind
    pick: int = 0


def corrupt_tool_call(
    tool: ToolSpec, arguments: dict[str, Any], fault: ToolFault
) -> tuple[str, str]:
    """The (function name, arguments text) of a call to ``tool`` broken as ``fault`` says."""
    text = orjson.dumps(arguments).decode()
    if fault.kind == "invalid_json":
        # A strict prefix of an object leaves its brace open, so it never parses.
        return tool.name, text[: max(1, len(text) // 2)]
    if fault.kind == "undeclared_name":
        return _undeclared_name(tool), text
    return tool.name, orjson.dumps(_violating(tool.parameters, arguments, fault.pick)).decode()


def _undeclared_name(tool: ToolSpec) -> str:
    name = f"{tool.name}_v2"
    while name in tool.declared:
        name += "_v2"
    return name


def _violating(schema: object, arguments: dict[str, Any], pick: int) -> object:
    """Arguments that still parse but break ``schema``: a required property dropped, or
    a typed property given a value of another type."""
    schema = schema if isinstance(schema, Mapping) else {}
    required = schema.get("required")
    missing = [name for name in required if name in arguments] if isinstance(required, list) else []
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    typed = [
        (str(name), spec["type"])
        for name, spec in properties.items()
        if isinstance(spec, Mapping) and isinstance(spec.get("type"), str)
    ]
    options = len(missing) + len(typed)
    if options == 0:
        # Nothing inside to break: an array is still JSON, but never the object required.
        return [arguments]
    choice = pick % options
    if choice < len(missing):
        return {name: value for name, value in arguments.items() if name != missing[choice]}
    name, kind = typed[choice - len(missing)]
    return {**arguments, name: 12345 if kind == "string" else f"not a {kind}"}

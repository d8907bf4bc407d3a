"""Values a prompt states for named fields, and a JSON schema's document filled with them.

The oracle's reading of a prompt (``oracle.py``): a field's value is *stated* where the
field's name, as words, is followed by ``:``, ``=``, ``is`` or ``was`` and the value:

    Order id: 4821.        The customer's email is ana.lima@example.com, ...
    priority: high;        The unit is "celsius".

A name's words are its ``snake_case``, ``kebab-case`` or ``camelCase`` parts, matched
without regard to case, joined by spaces, ``_`` or ``-``, and may carry a possessive
(``customer's name`` states ``customer_name``). A nested field is looked up by its path
first (``customer.name`` as ``customer name``), then by its own name. A value is quoted,
or runs to the next comma, semicolon, question or exclamation mark, closing parenthesis,
line end, or full stop followed by a space or the end (so ``12.5`` and e-mail addresses
stay whole). The last statement of a field wins, as a later correction would.

A stated value is kept only when it fits the field's schema (a number for ``integer`` and
``number``, ``yes``/``no``/``true``/``false`` for ``boolean``, one of an ``enum``'s
values, a string within its length bounds); otherwise, and for fields the prompt does not
state, the field gets the schema's example value (``text.example_for_schema``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from emulator.content.text import example_for_schema

_MAX_DEPTH = 8
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SEPARATOR = r"(?:\s*[:=]\s*|\s+(?:is|was)\s+)"
_END = r"(?=\s*(?:[,;?!)\n]|\.(?=\s|$)|$))"
_VALUE = rf'(?:"(?P<quoted>[^"\n]*)"|(?P<bare>[^\s"][^"\n]*?){_END})'
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_TRUTHS = {"yes": True, "true": True, "y": True, "no": False, "false": False, "n": False}

Path = tuple[str, ...]


def name_words(name: str) -> list[str]:
    """A field name's words, lower case: ``order_id`` and ``orderId`` are ``order id``."""
    return [word.lower() for word in _WORD.findall(name)]


def stated_value(text: str, words: Sequence[str]) -> str | None:
    """The last value ``text`` states for the field named by ``words``, or None."""
    if not words:
        return None
    name = r"(?:'s)?[\s_-]+".join(re.escape(word) for word in words)
    pattern = re.compile(rf"(?<![\w']){name}{_SEPARATOR}{_VALUE}", re.IGNORECASE)
    found = None
    for match in pattern.finditer(text):
        found = match.group("quoted") if match.group("quoted") is not None else match["bare"]
    return found.strip() if found is not None else None


def fill_schema(schema: object, text: str) -> Any:
    """A document for ``schema`` whose fields carry the values ``text`` states for them."""
    return _fill(schema, text, (), 0)


def _fill(schema: object, text: str, path: Path, depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH or "const" in schema:
        return example_for_schema(schema)
    for combinator in ("anyOf", "oneOf", "allOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return _fill(options[0], text, path, depth + 1)
    kind = _kind(schema)
    if kind == "object":
        return _fill_object(schema, text, path, depth)
    stated = _stated(text, path)
    coerce = _COERCIONS.get(kind)
    value = coerce(stated, schema) if stated is not None and coerce is not None else None
    return value if value is not None else example_for_schema(schema)


def _kind(schema: Mapping[str, Any]) -> str:
    if isinstance(schema.get("enum"), list):
        return "enum"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), "null")
    if isinstance(kind, str):
        return kind
    return "object" if "properties" in schema else "string"


def _fill_object(schema: Mapping[str, Any], text: str, path: Path, depth: int) -> Any:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    # As example_for_schema: without a required list every declared property is filled.
    names = required if isinstance(required, list) else list(properties)
    field_schema = {"type": "string"}
    return {
        str(name): _fill(properties.get(name, field_schema), text, (*path, str(name)), depth + 1)
        for name in names
    }


def _stated(text: str, path: Path) -> str | None:
    """The value stated for the field at ``path``: by its whole path, then its own name."""
    if not path:
        return None
    whole = [word for part in path for word in name_words(part)]
    found = stated_value(text, whole)
    if found is None and len(path) > 1:
        found = stated_value(text, name_words(path[-1]))
    return found


def _as_string(value: str, schema: Mapping[str, Any]) -> str | None:
    shortest, longest = schema.get("minLength"), schema.get("maxLength")
    if isinstance(shortest, int) and len(value) < shortest:
        return None
    if isinstance(longest, int) and len(value) > longest:
        return None
    return value


def _as_integer(value: str, schema: Mapping[str, Any]) -> int | None:
    number = _NUMBER.match(value)
    if number is None or "." in number.group():
        return None
    return int(number.group())


def _as_number(value: str, schema: Mapping[str, Any]) -> int | float | None:
    number = _NUMBER.match(value)
    if number is None:
        return None
    text = number.group()
    return float(text) if "." in text else int(text)


def _as_boolean(value: str, schema: Mapping[str, Any]) -> bool | None:
    return _TRUTHS.get(value.lower())


def _as_enum(value: str, schema: Mapping[str, Any]) -> object:
    wanted = value.casefold()
    options = schema["enum"]
    return next((option for option in options if str(option).casefold() == wanted), None)


_COERCIONS: dict[str, Callable[[str, Mapping[str, Any]], Any]] = {
    "string": _as_string,
    "integer": _as_integer,
    "number": _as_number,
    "boolean": _as_boolean,
    "enum": _as_enum,
}

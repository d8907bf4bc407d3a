"""Requests checked as real servers check them: pydantic's verdict as one error naming its field.

Each format declares its requests as pydantic models (``openai_request.py``,
``anthropic_request.py``, ``gemini_request.py``): strict about the types of the fields
it reads (no ``"0.5"`` for a number, no ``1.0`` or ``true`` for an integer), lenient about
fields it does not know. A failure becomes one ``BadRequest`` about the most specific
field at fault, named in the format's notation:

- OpenAI: ``messages[0].role`` in ``error.param``, with OpenAI's phrasing and ``code``
  (``invalid_type``, ``invalid_value``, ``missing_required_parameter``);
- Anthropic: ``messages.0.role: Input should be 'user' or 'assistant'`` (its API reports
  the field in the message, as pydantic words it);
- Gemini: ``Invalid value at 'contents[0].role' ...`` in proto (snake_case) names, the
  field also in a ``google.rpc.BadRequest`` detail.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from emulator.request_parsing import BadRequest

Model = TypeVar("Model", bound=BaseModel)
Path = tuple[str | int, ...]

_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class FieldError:
    """The error a request is refused for: where in the client's document, and what."""

    path: Path
    kind: str
    message: str
    value: Any
    context: dict[str, Any]
    expected: tuple[str, ...] = ()
    """For a wrong type: every type the field takes (a union's branches)."""


Render = Callable[[FieldError], BadRequest]


def validated(model: type[Model], document: dict[str, Any], render: Render) -> Model:
    """``document`` as ``model``; raises ``render``'s BadRequest for the field at fault."""
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        raise render(field_error(exc, document)) from None


def field_error(exc: ValidationError, document: dict[str, Any]) -> FieldError:
    """The deepest error (a part inside a message, not "the message is not a string"); a
    wrong type where a union's every branch failed lists all the types it takes."""
    located = [(_document_path(document, error["loc"]), error) for error in exc.errors()]
    path, first = max(located, key=lambda item: len(item[0]))
    same = [error for where, error in located if where == path]
    expected = tuple(dict.fromkeys(_EXPECTED.get(error["type"], "") for error in same))
    if "" in expected:
        expected = ()
    return FieldError(
        path,
        first["type"],
        first["msg"],
        first.get("input"),
        dict(first.get("ctx") or {}),
        expected,
    )


def _document_path(document: Any, loc: tuple[str | int, ...]) -> Path:
    """The error's place in the client's document. Pydantic's also names the union
    branches and tags it tried (``str``, ``list[...]``): walking the document along it
    leaves them out. A step may be an alias the client wrote in snake_case."""
    node, path = document, []
    for position, step in enumerate(loc):
        key = _key(node, step)
        if isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        elif key is not None:
            node = node[key]
        elif not (position == len(loc) - 1 and isinstance(node, dict)):
            continue  # a branch or a tag; a missing field is named below
        path.append(step)
    return tuple(path)


def _key(node: object, step: str | int) -> str | None:
    """The key ``step`` names in a JSON object: itself, or its snake_case spelling."""
    if not isinstance(node, dict) or not isinstance(step, str):
        return None
    if step in node:
        return step
    snake = snake_case(step)
    return snake if snake in node else None


def snake_case(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def json_type(value: object) -> str:
    """How OpenAI names a value's JSON type in its errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


# --- each format's words --------------------------------------------------------------


def openai_bad_request(error: FieldError) -> BadRequest:
    """OpenAI's phrasing, ``param`` as ``messages[0].content`` and its error ``code``."""
    param = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in error.path)
    param = param.lstrip(".")
    message, code = _openai_words(error, param)
    return BadRequest(message, param or None, code=code)


def _openai_words(error: FieldError, param: str) -> tuple[str, str]:
    kind, context, value = error.kind, error.context, error.value
    if kind == "missing":
        return f"Missing required parameter: '{param}'.", "missing_required_parameter"
    if error.expected:
        wanted = " or ".join(error.expected)
        wanted = f"one of {wanted}" if len(error.expected) > 1 else wanted
        got = json_type(value)
        message = f"Invalid type for '{param}': expected {wanted}, but got {got} instead."
        return message, "invalid_type"
    if kind == "literal_error":
        supported = context.get("expected", "")
        return f"Invalid value: {value!r}. Supported values are: {supported}.", "invalid_value"
    for bound, sign in _BOUNDS:
        if bound in context:
            return _out_of_range(param, value, sign, context[bound])
    return f"Invalid '{param}': {error.message}.", "invalid_value"


_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def _out_of_range(param: str, value: object, sign: str, limit: object) -> tuple[str, str]:
    number = "integer" if isinstance(value, int) else "decimal"
    side = "below_min" if sign.startswith(">") else "above_max"
    words = side.replace("_", " ") + "imum value"
    message = (
        f"Invalid '{param}': {number} {words}. "
        f"Expected a value {sign} {limit}, but got {value} instead."
    )
    return message, f"{number}_{side}_value"


# Pydantic names the model class a block or message failed as; Anthropic's API does not.
_ANTHROPIC_WORDS = {
    "missing": "Field required",
    "model_type": "Input should be a valid dictionary",
    "model_attributes_type": "Input should be a valid dictionary",
}


def anthropic_bad_request(error: FieldError) -> BadRequest:
    """Anthropic's phrasing: ``messages.0.role: Input should be 'user' or 'assistant'``."""
    param = ".".join(str(step) for step in error.path)
    message = _ANTHROPIC_WORDS.get(error.kind, error.message)
    return BadRequest(f"{param}: {message}" if param else message, param or None)


def gemini_bad_request(error: FieldError) -> BadRequest:
    """Gemini's phrasing, in proto names: ``Invalid value at 'generation_config.temperature'``."""
    param = "".join(
        f"[{step}]" if isinstance(step, int) else f".{snake_case(step)}" for step in error.path
    ).lstrip(".")
    if error.kind == "missing":
        field = param.rsplit(".", 1)[-1]
        return BadRequest(f"* GenerateContentRequest.{param}: {field} is not specified", param)
    proto_type = _PROTO_TYPES.get(error.kind)
    if proto_type is not None:
        value = orjson.dumps(error.value, default=str).decode()
        return BadRequest(f"Invalid value at '{param}' ({proto_type}), {value}", param or None)
    return BadRequest(f"Invalid value at '{param}': {error.message}.", param or None)


_PROTO_TYPES = {
    "string_type": "TYPE_STRING",
    "int_type": "TYPE_INT32",
    "float_type": "TYPE_FLOAT",
    "bool_type": "TYPE_BOOL",
}

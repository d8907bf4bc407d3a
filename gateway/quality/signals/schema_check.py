"""Checks tool call arguments against the tool's JSON schema, compiling each schema once.

Compiling a validator (and checking the schema against its metaschema) costs far more
than validating one small object, and the same few tool schemas arrive on request after
request; so validators are cached by the schema's canonical JSON in a bounded LRU. The
cache memoises a pure function, which is why it may live at module level. jsonschema is
imported with the first schema checked: a gateway whose traffic carries no tool schemas
never loads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SCHEMA_CACHE_SIZE = 256
"""Distinct schemas whose validators are kept."""
_MAX_MESSAGE_CHARS = 160


class UnusableSchema(ValueError):
    """The schema is not a valid JSON schema, or refers to something that cannot be resolved."""


def schema_violation(schema: Mapping[str, Any], instance: Any) -> str | None:
    """How the instance fails the schema (the most relevant error), or None when it passes.

    Raises `UnusableSchema` when the schema itself is at fault: that is no evidence about
    the backend's answer.
    """
    from jsonschema.exceptions import best_match
    from referencing.exceptions import Unresolvable

    validator = compiled_validator(schema)
    if validator is None:
        raise UnusableSchema("the schema is not a valid JSON schema")
    try:
        error = best_match(validator.iter_errors(instance))
    # What a schema that passed its metaschema can still raise while validating.
    except (Unresolvable, re.error, RecursionError) as exc:
        raise UnusableSchema(f"the schema cannot be applied: {type(exc).__name__}") from exc
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path)
    message = _describe(error)
    return f"{message} (at /{where})" if where else message


def _describe(error: Any) -> str:
    """What the schema wanted, never the offending value: that is response text, which
    may quote a user's data, and these details are shown on the quality API."""
    if error.validator == "required":
        message = str(error.message)  # "'name' is a required property": schema names only
    else:
        message = f"fails {error.validator!s}: {error.validator_value!r}"
    return message if len(message) <= _MAX_MESSAGE_CHARS else _short(message)


def schema_errors(schema: Mapping[str, Any], instance: Any) -> str | None:
    """Like `schema_violation`, for callers that trust their schema: unusable means None."""
    try:
        return schema_violation(schema, instance)
    except UnusableSchema:
        return None


def compiled_validator(schema: Mapping[str, Any]) -> Validator | None:
    """The cached validator for a schema; None when the schema is invalid."""
    try:
        canonical = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS, default=_plain)
    except orjson.JSONEncodeError:
        return None
    return _compile(canonical)


@lru_cache(maxsize=SCHEMA_CACHE_SIZE)
def _compile(canonical: bytes) -> Validator | None:
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import SchemaError

    schema = orjson.loads(canonical)
    if not isinstance(schema, dict):
        return None
    try:
        # Tool schemas rarely name a draft; 2020-12 accepts what they use in practice. A
        # client's odd `$schema` (a number, a list) makes validator_for itself raise.
        cls = validators.validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
    except (SchemaError, RecursionError, TypeError, AttributeError, ValueError, LookupError):
        return None
    return cls(schema)


def _plain(value: Any) -> Any:
    """orjson's fallback: mappings that are not dicts (a frozen config's, say)."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def _short(message: str) -> str:
    return message[: _MAX_MESSAGE_CHARS - 1] + "…"

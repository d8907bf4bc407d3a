"""Deterministic content for the emulator: words from a seed, JSON from a schema, token counts."""

from __future__ import annotations

import hashlib
import random
import zlib
from collections.abc import Callable, Mapping
from typing import Any

# Plain lowercase ASCII words: no escaping in JSON, no surprises in stop-string tests.
VOCABULARY: tuple[str, ...] = tuple(
    """
    the of and to in is was for on that with as by at from it an be this which or are
    have not but had his they were one all she there been their has when who will more
    no if out so said what up its about into than them can only other new some could
    time these two may then do first any my now such like our over man me even most made
    after also did many before must through back years where much your way well down
    should because each just those people how too little state good very make world
    still own see men work long get here between both life being under never day same
    another know while last might us great old year off come since against go came right
    used take three river stone signal engine router switch track train yard
    """.split()  # noqa: SIM905 - a word list reads better as prose
)
TOKENS: tuple[str, ...] = tuple(word + " " for word in VOCABULARY)

_MASK_64 = (1 << 64) - 1
# A large odd constant spreads consecutive choice indices across the seed space.
_GOLDEN_64 = 0x9E3779B97F4A7C15
_MAX_SCHEMA_DEPTH = 8


CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Approximate token count: one token per four characters, at least one."""
    return max(1, len(text) // CHARS_PER_TOKEN)


def seed_from_text(text: str) -> int:
    """A stable 64-bit seed; Python's ``hash`` is salted per process, so it cannot be used."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def choice_seed(base_seed: int, index: int) -> int:
    """Seed for choice ``index`` so that ``n`` choices differ yet repeat across runs."""
    return (base_seed + (index + 1) * _GOLDEN_64) & _MASK_64


def generate_tokens(seed: int, count: int) -> list[str]:
    """``count`` tokens, each a vocabulary word followed by a space."""
    return random.Random(seed).choices(TOKENS, k=count)


def split_pieces(text: str, size: int = 4) -> list[str]:
    """Cut ``text`` into fragments of ``size`` characters, as a tokenizer would roughly do."""
    return [text[start : start + size] for start in range(0, len(text), size)]


def cut_at_stop(pieces: list[str], stops: tuple[str, ...]) -> tuple[list[str], int] | None:
    """Truncate before the earliest stop string.

    Returns the kept pieces and how many pieces were generated up to the end of the
    match (the count a real engine bills), or None when no stop string occurs.
    """
    text = "".join(pieces)
    stop = earliest_stop(text, stops)
    if stop is None:
        return None
    cut, length = text.find(stop), len(stop)
    kept: list[str] = []
    consumed = offset = 0
    for piece in pieces:
        if offset < cut:
            kept.append(piece[: cut - offset])
        offset += len(piece)
        consumed += 1
        if offset >= cut + length:
            break
    return [piece for piece in kept if piece], consumed


def earliest_stop(text: str, stops: tuple[str, ...]) -> str | None:
    """The stop string that occurs first in ``text`` (the shortest of those at one place)."""
    matches = [(pos, len(stop), stop) for stop in stops if stop and (pos := text.find(stop)) >= 0]
    return min(matches)[2] if matches else None


def token_logprob(token: str, salt: bytes = b"") -> float:
    """A fixed pseudo log-probability in [-4.0, -0.01] per token text.

    ``salt`` names another model: the same token gets other numbers there.
    """
    return -((zlib.crc32(salt + token.encode()) % 400) + 1) / 100


def top_alternatives(token: str, count: int, salt: bytes = b"") -> list[tuple[str, float]]:
    """The token itself, then vocabulary tokens with strictly falling log-probabilities."""
    if count <= 0:
        return []
    logprob = token_logprob(token, salt)
    alternatives = [(token, logprob)]
    position = zlib.crc32(salt + token.encode())
    while len(alternatives) < count:
        position += 1
        candidate = TOKENS[position % len(TOKENS)]
        if candidate != token:
            alternatives.append((candidate, round(logprob - 0.75 * len(alternatives), 4)))
    return alternatives


def example_for_schema(schema: object, depth: int = 0) -> Any:
    """A value that satisfies the common parts of a JSON schema (type, enum, const, required)."""
    if not isinstance(schema, Mapping) or depth > _MAX_SCHEMA_DEPTH:
        return None
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for combinator in ("anyOf", "oneOf", "allOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return example_for_schema(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), "null")
    if not isinstance(kind, str):
        kind = "object" if "properties" in schema else "string"
    builder = _BUILDERS.get(kind)
    return builder(schema, depth) if builder else None


_STRING_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


def _example_string(schema: Mapping[str, Any], depth: int) -> str:
    value = _STRING_FORMATS.get(str(schema.get("format")), "example")
    minimum = schema.get("minLength")
    if isinstance(minimum, int) and len(value) < minimum:
        value += "x" * (minimum - len(value))
    return value


def _example_number(schema: Mapping[str, Any], depth: int) -> float:
    minimum = schema.get("minimum")
    return float(minimum) if isinstance(minimum, int | float) else 1.5


def _example_integer(schema: Mapping[str, Any], depth: int) -> int:
    minimum = schema.get("minimum")
    return int(minimum) if isinstance(minimum, int | float) else 1


def _example_array(schema: Mapping[str, Any], depth: int) -> list[Any]:
    minimum = schema.get("minItems")
    count = minimum if isinstance(minimum, int) and minimum > 1 else 1
    return [example_for_schema(schema.get("items", {}), depth + 1) for _ in range(count)]


def _example_object(schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    # Without a required list every declared property is filled: callers expect content.
    names = required if isinstance(required, list) else list(properties)
    return {
        str(name): example_for_schema(properties.get(name, {"type": "string"}), depth + 1)
        for name in names
    }


_BUILDERS: dict[str, Callable[[Mapping[str, Any], int], Any]] = {
    "string": _example_string,
    "number": _example_number,
    "integer": _example_integer,
    "boolean": lambda schema, depth: True,
    "array": _example_array,
    "object": _example_object,
    "null": lambda schema, depth: None,
}

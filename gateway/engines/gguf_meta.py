"""What a GGUF file's header says about the model's KV cache, read without loading it.

A GGUF file starts with its metadata: `GGUF`, a version (2 or 3), the tensor count, then
typed key/value pairs, little-endian. Only the integers that size the KV cache are kept:
`{arch}.block_count` (layers), `{arch}.attention.head_count` and `head_count_kv`,
`{arch}.embedding_length`, and the optional `key_length` / `value_length` per head. Every
other value (the tokenizer's vocabulary among them) is skipped. The read is bounded: at
most `MAX_KEYS` keys, strings of at most `MAX_STRING_BYTES`, arrays of at most
`MAX_ARRAY_ITEMS` items; a file beyond these, or not GGUF, raises `GgufError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MAX_KEYS = 4096
MAX_STRING_BYTES = 1 << 20
MAX_ARRAY_ITEMS = 1 << 22
KV_ELEMENT_BYTES = 2
"""llama.cpp's default KV cache type is f16 (`--cache-type-k/-v` change it)."""

_SCALARS: dict[int, str] = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
    10: "<Q", 11: "<q", 12: "<d",
}  # fmt: skip
_STRING = 8
_ARRAY = 9


class GgufError(ValueError):
    """The file is not a GGUF this reader understands."""


@dataclass(frozen=True, slots=True)
class KvShape:
    """The per-token KV cache of a model: layers by KV heads by (key + value) dims."""

    architecture: str
    layers: int
    kv_heads: int
    key_length: int
    value_length: int

    def bytes_per_token(self, element_bytes: int = KV_ELEMENT_BYTES) -> int:
        """Bytes one token takes in the KV cache, at `element_bytes` per value."""
        return self.layers * self.kv_heads * (self.key_length + self.value_length) * element_bytes


def read_kv_shape(path: Path) -> KvShape:
    """The KV cache's shape from the file's metadata; `GgufError` when it cannot tell."""
    try:
        with path.open("rb") as handle:
            values = _read_metadata(handle)
    except (OSError, struct.error, UnicodeDecodeError) as exc:
        raise GgufError(f"{path}: {exc}") from exc
    return _shape(values, path)


def _shape(values: dict[str, int | str], path: Path) -> KvShape:
    arch = values.get("general.architecture")
    if not isinstance(arch, str):
        raise GgufError(f"{path}: no general.architecture")

    def number(key: str, default: int | None = None) -> int:
        value = values.get(f"{arch}.{key}", default)
        if not isinstance(value, int) or value <= 0:
            raise GgufError(f"{path}: no {arch}.{key}")
        return value

    heads = number("attention.head_count")
    head_dim = number("embedding_length") // heads
    return KvShape(
        architecture=arch,
        layers=number("block_count"),
        kv_heads=number("attention.head_count_kv", heads),
        key_length=number("attention.key_length", head_dim),
        value_length=number("attention.value_length", head_dim),
    )


def _read_metadata(handle: BinaryIO) -> dict[str, int | str]:
    if handle.read(4) != b"GGUF":
        raise GgufError("not a GGUF file")
    (version,) = _unpack(handle, "<I")
    if version not in (2, 3):
        raise GgufError(f"GGUF version {version} is not supported")
    _tensors, count = _unpack(handle, "<QQ")
    if count > MAX_KEYS:
        raise GgufError(f"{count} metadata keys (at most {MAX_KEYS} are read)")
    kept: dict[str, int | str] = {}
    for _ in range(count):
        key = _string(handle)
        (kind,) = _unpack(handle, "<I")
        if key == "general.architecture" and kind == _STRING:
            kept[key] = _string(handle)
        elif kind in _SCALARS and kind not in (6, 7, 12):
            (number,) = _unpack(handle, _SCALARS[kind])
            kept[key] = int(number)
        else:
            _skip(handle, kind)
    return kept


def _unpack(handle: BinaryIO, fmt: str) -> tuple[int, ...]:
    size = struct.calcsize(fmt)
    raw = handle.read(size)
    if len(raw) != size:
        raise GgufError("the file ends inside its metadata")
    return struct.unpack(fmt, raw)


def _string(handle: BinaryIO) -> str:
    (length,) = _unpack(handle, "<Q")
    if length > MAX_STRING_BYTES:
        raise GgufError(f"a string of {length} bytes (at most {MAX_STRING_BYTES})")
    raw = handle.read(length)
    if len(raw) != length:
        raise GgufError("the file ends inside its metadata")
    return raw.decode("utf-8")


def _skip(handle: BinaryIO, kind: int) -> None:
    if kind in _SCALARS:
        handle.seek(struct.calcsize(_SCALARS[kind]), 1)
    elif kind == _STRING:
        (length,) = _unpack(handle, "<Q")
        if length > MAX_STRING_BYTES:
            raise GgufError(f"a string of {length} bytes (at most {MAX_STRING_BYTES})")
        handle.seek(length, 1)
    elif kind == _ARRAY:
        item_kind, items = _unpack(handle, "<IQ")
        if items > MAX_ARRAY_ITEMS:
            raise GgufError(f"an array of {items} items (at most {MAX_ARRAY_ITEMS})")
        if item_kind in _SCALARS:
            handle.seek(items * struct.calcsize(_SCALARS[item_kind]), 1)
        else:
            for _ in range(items):
                _skip(handle, item_kind)
    else:
        raise GgufError(f"unknown metadata type {kind}")

"""Small GGUF files written for tests: a header and the metadata keys given, no tensors."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any


def gguf_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _value(kind: int, value: Any) -> bytes:
    if kind == 8:
        return struct.pack("<I", 8) + gguf_string(value)
    if kind == 9:  # (item kind, items)
        item_kind, items = value
        body = b"".join(gguf_string(i) if item_kind == 8 else struct.pack("<i", i) for i in items)
        return struct.pack("<IIQ", 9, item_kind, len(items)) + body
    fmt = {4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q"}[kind]
    return struct.pack("<I", kind) + struct.pack(fmt, value)


def gguf(path: Path, pairs: list[tuple[str, int, Any]], *, version: int = 3) -> Path:
    header = b"GGUF" + struct.pack("<IQQ", version, 7, len(pairs))
    path.write_bytes(header + b"".join(gguf_string(k) + _value(t, v) for k, t, v in pairs))
    return path


SMOL_LIKE = [
    ("general.architecture", 8, "llama"),
    ("general.name", 8, "tiny"),
    ("tokenizer.ggml.tokens", 9, (8, ["<s>", "</s>", "hello"])),
    ("tokenizer.ggml.token_type", 9, (5, [1, 1, 1])),
    ("llama.rope.freq_base", 6, 10000.0),
    ("llama.use_parallel_residual", 7, True),
    ("llama.block_count", 4, 30),
    ("llama.embedding_length", 4, 576),
    ("llama.attention.head_count", 4, 9),
    ("llama.attention.head_count_kv", 10, 3),
]

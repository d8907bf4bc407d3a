"""The KV cache's shape read from a GGUF file's metadata, and the host-memory cache it sizes."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from gateway.engines.gguf_meta import GgufError, read_kv_shape
from gateway.engines.launcher import MIB, ReplicaOptions, host_cache_tokens
from tests.gguf_files import SMOL_LIKE, gguf, gguf_string


def test_the_shape_of_a_grouped_query_model(tmp_path: Path) -> None:
    shape = read_kv_shape(gguf(tmp_path / "m.gguf", SMOL_LIKE))

    assert (shape.architecture, shape.layers, shape.kv_heads) == ("llama", 30, 3)
    assert (shape.key_length, shape.value_length) == (64, 64)  # 576 / 9 heads
    assert shape.bytes_per_token() == 30 * 3 * (64 + 64) * 2


def test_explicit_key_and_value_lengths_win_over_the_embedding(tmp_path: Path) -> None:
    pairs = [
        *SMOL_LIKE,
        ("llama.attention.key_length", 4, 128),
        ("llama.attention.value_length", 4, 96),
    ]
    shape = read_kv_shape(gguf(tmp_path / "m.gguf", pairs))

    assert (shape.key_length, shape.value_length) == (128, 96)


def test_without_kv_heads_every_head_keeps_its_own(tmp_path: Path) -> None:
    pairs = [p for p in SMOL_LIKE if p[0] != "llama.attention.head_count_kv"]

    assert read_kv_shape(gguf(tmp_path / "m.gguf", pairs, version=2)).kv_heads == 9


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"GGML" + bytes(20), "not a GGUF"),
        (b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "version 1"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string("general.architecture"), "ends"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 10**9), "metadata keys"),
        (
            b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string("x") + struct.pack("<I", 99),
            "type 99",
        ),
    ],
)
def test_a_file_it_cannot_read_is_an_error(tmp_path: Path, content: bytes, says: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)

    with pytest.raises(GgufError, match=says):
        read_kv_shape(path)


def test_a_model_without_its_layer_count_is_an_error(tmp_path: Path) -> None:
    pairs = [p for p in SMOL_LIKE if p[0] != "llama.block_count"]

    with pytest.raises(GgufError, match=r"llama\.block_count"):
        read_kv_shape(gguf(tmp_path / "m.gguf", pairs))


def test_host_cache_tokens_follow_the_cache_size_and_key_type(tmp_path: Path) -> None:
    model = gguf(tmp_path / "m.gguf", SMOL_LIKE)
    per_token = 30 * 3 * (64 + 64) * 2

    f16 = host_cache_tokens(ReplicaOptions(model_path=model, cache_ram_mib=64))
    q4 = host_cache_tokens(ReplicaOptions(model_path=model, cache_ram_mib=64, cache_type_k="q4_0"))

    assert f16 == 64 * MIB // per_token
    assert q4 > f16  # quantised keys take less room
    assert host_cache_tokens(ReplicaOptions(model_path=model, cache_ram_mib=0)) == 0


def test_a_model_file_without_a_kv_shape_gets_no_host_cache_tokens(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"not a model")

    assert host_cache_tokens(ReplicaOptions(model_path=model, cache_ram_mib=64)) == 0

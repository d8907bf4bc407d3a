"""Key layout, the keyed hash and the server secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.tenancy.key_material import (
    KEY_CHARS,
    PREFIX_CHARS,
    SecretError,
    key_prefix,
    keyed_hash,
    load_server_secret,
    new_key,
    same_hash,
)


def test_a_new_key_has_its_prefix_and_is_never_repeated() -> None:
    keys = {new_key() for _ in range(200)}
    assert len(keys) == 200
    for key in keys:
        assert len(key) == KEY_CHARS and key.startswith("sk-sy-")
        assert key_prefix(key) == key[:PREFIX_CHARS]


@pytest.mark.parametrize("token", ["", "sk-sy-short", "sk-other-" + "x" * 60, "Bearer x"])
def test_other_tokens_have_no_prefix(token: str) -> None:
    assert key_prefix(token) is None


def test_the_hash_is_keyed_by_the_server_secret() -> None:
    key = new_key()
    one, other = keyed_hash(b"s" * 32, key), keyed_hash(b"t" * 32, key)
    assert one != other and len(one) == 64
    assert same_hash(one, keyed_hash(b"s" * 32, key))
    assert not same_hash(one, other)
    assert key not in one


def test_the_secret_comes_from_a_file_before_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SY_TEST_SECRET", "e" * 32)
    assert load_server_secret("SY_TEST_SECRET", None) == b"e" * 32
    path = tmp_path / "secret"
    path.write_text("f" * 40 + "\n")
    assert load_server_secret("SY_TEST_SECRET", str(path)) == b"f" * 40


@pytest.mark.parametrize("value", [None, "", "too-short"])
def test_a_missing_or_short_secret_is_refused_without_showing_it(
    value: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if value is None:
        monkeypatch.delenv("SY_TEST_SECRET", raising=False)
    else:
        monkeypatch.setenv("SY_TEST_SECRET", value)
    with pytest.raises(SecretError) as caught:
        load_server_secret("SY_TEST_SECRET", None)
    assert "keys.secret_env: $SY_TEST_SECRET" in str(caught.value)
    assert "too-short" not in str(caught.value)

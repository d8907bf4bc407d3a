"""Client key material: the server secret, new keys, and their keyed hash.

A virtual key reads `sk-sy-` + 10 lookup characters + 43 secret characters. The first 16
characters (`sk-sy-` and the lookup part) are its public prefix: shown to humans, stored in
clear, and used to find the key's row; the whole key is checked by comparing its
HMAC-SHA256 under the server secret with the stored one in constant time. A database
leak without the server secret gives nothing to test guesses against.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

KEY_PREFIX = "sk-sy-"
LOOKUP_CHARS = 10
SECRET_CHARS = 43
PREFIX_CHARS = len(KEY_PREFIX) + LOOKUP_CHARS
KEY_CHARS = PREFIX_CHARS + SECRET_CHARS
MIN_SECRET_CHARS = 16
_LOOKUP_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"


class SecretError(ValueError):
    """The server secret is missing or too short; the message names where it was looked
    for, never its value."""


def load_server_secret(env_name: str, file: str | None) -> bytes:
    """The server secret from `file` (when set) or the environment variable `env_name`."""
    if file is not None:
        try:
            text = Path(file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SecretError(f"keys.secret_file: {file}: {exc.strerror}") from None
        where = f"keys.secret_file {file}"
    else:
        text = os.environ.get(env_name, "").strip()
        where = f"keys.secret_env: ${env_name}"
    if len(text) < MIN_SECRET_CHARS:
        raise SecretError(
            f"{where} must hold a secret of at least {MIN_SECRET_CHARS} characters "
            "(e.g. `openssl rand -hex 32`)"
        )
    return text.encode()


def new_key() -> str:
    """A fresh virtual key (see the module docstring for its layout)."""
    lookup = "".join(secrets.choice(_LOOKUP_ALPHABET) for _ in range(LOOKUP_CHARS))
    body = secrets.token_urlsafe(32)
    assert len(body) == SECRET_CHARS
    return KEY_PREFIX + lookup + body


def new_key_id() -> str:
    """A key's permanent id (kept through rotations): `key_` and 12 hex digits."""
    return "key_" + secrets.token_hex(6)


def key_prefix(key: str) -> str | None:
    """A presented key's public prefix, or None when it is not shaped as a virtual key."""
    if len(key) != KEY_CHARS or not key.startswith(KEY_PREFIX):
        return None
    return key[:PREFIX_CHARS]


def keyed_hash(server_secret: bytes, key: str) -> str:
    """HMAC-SHA256 of `key` under the server secret, hex."""
    return hmac.new(server_secret, key.encode(), hashlib.sha256).hexdigest()


def same_hash(expected: str, presented: str) -> bool:
    """Constant-time equality of two hex digests."""
    return hmac.compare_digest(expected.encode(), presented.encode())


def shown_prefix(prefix: str) -> str:
    """How a key is shown to humans: `sk-sy-abcdefghij…`."""
    return prefix + "…"

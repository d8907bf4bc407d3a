"""Anthropic's thinking blocks as the API guards them: signed, redacted, and required.

A ``thinking`` block's ``signature`` is a keyed MAC of its text; a ``redacted_thinking``
block's ``data`` is a random nonce followed by a keyed MAC of it, in base64. Both are
made with a key fixed in the emulator, so only the emulator makes them (and any
emulator checks them), and a client or gateway that edits, drops or invents one is
refused as Anthropic's API refuses it. Real signatures and redacted data carry the
thinking encrypted; the emulator's carry nothing but the MAC.

On the way in, every ``thinking`` block of an assistant turn must carry the signature of
its text (``messages.1.content.0: Invalid `signature` in `thinking` block``), and every
``redacted_thinking`` block data that verifies. With thinking enabled, a request that
continues a tool-use turn (its last message the user's ``tool_result``, the assistant
message before it a ``tool_use``) must keep that assistant message's thinking first, as
Anthropic's API requires.

The prompt text Anthropic documents for testing redacted thinking
(``REDACTED_THINKING_TRIGGER``) in the last user turn makes the answer's thinking a
``redacted_thinking`` block.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Sequence

from emulator.request_parsing import BadRequest
from emulator.wire.anthropic_request import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

REDACTED_THINKING_TRIGGER = (
    "ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_"
    "46C9A13E193C177646C7398A98432ECCCE4C1253D5E2D82641AC0E52CC2876CB"
)
# Fixed, not secret: any emulator must accept what another one (or an earlier run) signed.
_KEY = b"switchyard-emulator-thinking-key"
_NONCE_BYTES = 16
_MAC_BYTES = 32
_THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


def signature(thinking: str) -> str:
    """The signature of a thinking block's text: stable for the same text."""
    return base64.b64encode(_mac(thinking.encode(), b"signature")).decode()


def redacted_data() -> str:
    """A fresh ``redacted_thinking`` block's opaque ``data``."""
    nonce = secrets.token_bytes(_NONCE_BYTES)
    return base64.b64encode(nonce + _mac(nonce, b"redacted")).decode()


def redacted_data_is_valid(data: str) -> bool:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(raw) != _NONCE_BYTES + _MAC_BYTES:
        return False
    nonce, mac = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
    return hmac.compare_digest(mac, _mac(nonce, b"redacted"))


def asks_for_redaction(messages: Sequence[Message]) -> bool:
    """Whether the last user turn's text holds Anthropic's redacted-thinking test string."""
    users = [message for message in messages if message.role == "user"]
    if not users:
        return False
    content = users[-1].content
    if isinstance(content, str):
        return REDACTED_THINKING_TRIGGER in content
    texts = (block.text for block in content if isinstance(block, TextBlock))
    return any(REDACTED_THINKING_TRIGGER in text for text in texts)


def check_thinking_turns(messages: Sequence[Message], *, thinking: bool) -> None:
    """Refuse edited thinking, and a tool-use turn continued without its thinking."""
    for index, message in enumerate(messages):
        if message.role == "assistant" and not isinstance(message.content, str):
            for position, block in enumerate(message.content):
                _check_block(f"messages.{index}.content.{position}", block)
    if thinking:
        _check_tool_turn(messages)


def _check_block(where: str, block: object) -> None:
    if isinstance(block, ThinkingBlock):
        if block.signature is None:
            raise BadRequest(f"{where}.thinking.signature: Field required", f"{where}.signature")
        if not hmac.compare_digest(block.signature, signature(block.thinking)):
            raise BadRequest(f"{where}: Invalid `signature` in `thinking` block", where)
    elif isinstance(block, RedactedThinkingBlock) and not redacted_data_is_valid(block.data):
        raise BadRequest(f"{where}: Invalid `data` in `redacted_thinking` block", where)


def _check_tool_turn(messages: Sequence[Message]) -> None:
    """Anthropic's rule: a tool-use turn being continued starts with its thinking."""
    if len(messages) < 2:
        return
    last, answered = messages[-1], messages[-2]
    if last.role != "user" or answered.role != "assistant":
        return
    if not (_holds(last, ToolResultBlock) and _holds(answered, ToolUseBlock)):
        return
    content = answered.content
    first = content[0] if isinstance(content, list) and content else None
    if isinstance(first, ThinkingBlock | RedactedThinkingBlock):
        return
    found = "text" if first is None else first.type
    where = f"messages.{len(messages) - 2}.content.0.type"
    message = (
        f"{where}: Expected `thinking` or `redacted_thinking`, but found `{found}`. "
        "When `thinking` is enabled, a final `assistant` message must start with a thinking "
        "block (preceding the lastmost set of `tool_use` and `tool_result` blocks). We "
        "recommend you include thinking blocks from previous turns. To avoid this "
        f"requirement, disable `thinking`. Please consult our documentation at {_THINKING_DOCS}"
    )
    raise BadRequest(message, where)


def _holds(message: Message, kind: type[object]) -> bool:
    content = message.content
    return not isinstance(content, str) and any(isinstance(block, kind) for block in content)


def _mac(message: bytes, purpose: bytes) -> bytes:
    digest = hashlib.blake2b(message, key=_KEY, person=purpose, digest_size=_MAC_BYTES)
    return digest.digest()

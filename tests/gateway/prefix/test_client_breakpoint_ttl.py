"""The retention a client's breakpoints ask for: its last mark's, in the provider's order."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.prefix.breakpoints import client_ttl

EPHEMERAL = {"type": "ephemeral"}
LONG = {"type": "ephemeral", "ttl": "1h"}


def text(mark: dict[str, Any] | None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "text", "text": "x"}
    if mark is not None:
        part["cache_control"] = mark
    return part


@pytest.mark.parametrize(
    ("messages", "tools", "ttl"),
    [
        pytest.param([{"role": "user", "content": [text(LONG)]}], None, "1h", id="one-1h"),
        pytest.param([{"role": "user", "content": [text(None)]}], None, "5m", id="unmarked"),
        pytest.param(
            [
                {"role": "system", "content": [text(LONG)]},
                {"role": "user", "content": [text(EPHEMERAL)]},
            ],
            None,
            "5m",
            id="last-mark-wins",
        ),
        pytest.param(
            [
                {"role": "user", "content": [text(None)], "cache_control": LONG},
                # A system message goes before the turns at the provider.
                {"role": "system", "content": [text(EPHEMERAL)]},
            ],
            None,
            "1h",
            id="provider-order",
        ),
        pytest.param(
            [{"role": "user", "content": "hi"}],
            [{"type": "function", "function": {"name": "f"}, "cache_control": LONG}],
            "1h",
            id="tools",
        ),
    ],
)
def test_client_ttl(messages: list[dict[str, Any]], tools: Any, ttl: str) -> None:
    assert client_ttl(messages, tools) == ttl

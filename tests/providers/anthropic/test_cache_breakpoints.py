"""Cache breakpoints on a Messages request: the host's, placed on the right blocks, and the
client's own `cache_control`, passed through and never overridden."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.anthropic.request_translation import to_messages_request
from providers.cache_breakpoints import AFTER_TOOLS, CacheBreakpoints

EPHEMERAL = {"type": "ephemeral"}
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
CONVERSATION = [
    {"role": "system", "content": "stable"},
    {"role": "user", "content": "one"},
    {"role": "assistant", "content": "answer"},
    {"role": "user", "content": "two"},
]


def translate(
    messages: list[dict[str, Any]],
    breakpoints: CacheBreakpoints | None = None,
    **fields: Any,
) -> tuple[dict[str, Any], int]:
    body = orjson.dumps({"model": "claude-x", "messages": messages, **fields})
    translated = to_messages_request(body, stream=False, breakpoints=breakpoints)
    return dict(translated.body), translated.breakpoints


def marks(body: dict[str, Any]) -> list[str]:
    """Where `cache_control` is, as `tools[i]`, `system[i]`, `messages[i][j]`."""
    found = [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    found += [f"system[{i}]" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        found += [
            f"messages[{i}][{j}]" for j, b in enumerate(message["content"]) if "cache_control" in b
        ]
    return found


@pytest.mark.parametrize(
    ("after", "where"),
    [
        ((0,), ["system[0]"]),
        ((0, 2), ["system[0]", "messages[1][0]"]),
        ((AFTER_TOOLS, 0), ["tools[0]", "system[0]"]),
    ],
)
def test_the_hosts_breakpoints_go_on_the_last_block_of_each_message(
    after: tuple[int, ...], where: list[str]
) -> None:
    body, added = translate(CONVERSATION, CacheBreakpoints(after), tools=[TOOL])
    assert marks(body) == where and added == len(where)
    assert body["system"][0]["cache_control"] == EPHEMERAL


def test_one_hour_retention_is_asked_for() -> None:
    body, _ = translate(CONVERSATION, CacheBreakpoints((0,), ttl="1h"))
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_a_message_that_became_no_block_marks_the_one_before() -> None:
    messages = [*CONVERSATION[:2], {"role": "assistant", "content": ""}, CONVERSATION[3]]
    body, _ = translate(messages, CacheBreakpoints((2,)))
    assert marks(body) == ["messages[0][0]"]


def test_without_breakpoints_nothing_is_marked() -> None:
    body, added = translate(CONVERSATION)
    assert marks(body) == [] and added == 0


@pytest.mark.parametrize(
    ("messages", "tools", "where"),
    [
        (
            [{"role": "system", "content": "s", "cache_control": EPHEMERAL}, CONVERSATION[1]],
            None,
            ["system[0]"],
        ),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "doc",
                            "cache_control": {**EPHEMERAL, "ttl": "1h"},
                        },
                        {"type": "text", "text": "question"},
                    ],
                }
            ],
            None,
            ["messages[0][0]"],
        ),
        ([CONVERSATION[1]], [{**TOOL, "cache_control": EPHEMERAL}], ["tools[0]"]),
    ],
)
def test_the_clients_own_marks_pass_through_and_the_hosts_are_not_added(
    messages: list[dict[str, Any]], tools: Any, where: list[str]
) -> None:
    fields = {"tools": tools} if tools else {}
    body, added = translate(messages, CacheBreakpoints((0,)), **fields)
    assert marks(body) == where and added == 0


def test_the_clients_ttl_is_kept() -> None:
    part = {"type": "text", "text": "doc", "cache_control": {**EPHEMERAL, "ttl": "1h"}}
    body, _ = translate([{"role": "user", "content": [part]}])
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_no_more_than_four_breakpoints() -> None:
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(9)
    ]
    body, added = translate(messages, CacheBreakpoints(tuple(range(8))))
    assert added == 4 and len(marks(body)) == 4

"""Wire parsing: the placement header (every instance counts, the source is `header`), the
request's headers and body as the proxy reads them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect

from gateway.config.placement import NO_REQUIREMENT
from gateway.errors import InvalidRequest, PayloadTooLarge
from gateway.http.proxy import receive_body
from gateway.http.wire import (
    REQUIRE_TAGS_HEADER,
    ChatHead,
    RequestHeaders,
    parse_body,
    required_tags,
    traits_of,
)

CHAT = b'{"model": "default", "messages": [{"role": "user", "content": "hi"}]}'


@pytest.mark.parametrize(
    ("raw", "tags"),
    [
        ([], set()),
        ([(b"x-switchyard-require-tags", b"eu")], {"eu"}),
        ([(b"x-switchyard-require-tags", b"EU, No-Retention")], {"eu", "no-retention"}),
        # A repeated header is one comma-separated list: neither instance may be dropped.
        (
            [(b"x-switchyard-require-tags", b"eu"), (b"x-switchyard-require-tags", b"local")],
            {"eu", "local"},
        ),
    ],
    ids=["absent", "one", "values-case-insensitive", "repeated"],
)
@pytest.mark.parametrize("kind", [Headers, RequestHeaders])
def test_required_tags_from_headers(
    raw: list[tuple[bytes, bytes]], tags: set[str], kind: type[Headers | RequestHeaders]
) -> None:
    headers = Headers(raw=raw) if kind is Headers else RequestHeaders(raw)
    requirement = required_tags(headers)
    assert requirement.tags == tags
    assert dict(requirement.sources) == ({"header": tags} if tags else {})


def test_request_headers_read_as_starlette_does() -> None:
    raw = [
        (b"authorization", b"Bearer one"),
        (b"x-session-id", b"s1"),
        (b"authorization", b"Bearer two"),
        (b"x-note", "caf\xe9".encode("latin-1")),
    ]
    ours, theirs = RequestHeaders(raw), Headers(raw=raw)
    for name in ("authorization", "x-session-id", "x-note", "absent"):
        assert ours.get(name) == theirs.get(name)
    assert ours.getlist("Authorization") == theirs.getlist("authorization")
    assert ours.getlist("absent") == []
    # ASGI servers send names in lower case; one that does not is still read.
    assert RequestHeaders([(b"X-Session-Id", b"s1")]).get("x-session-id") == "s1"


def test_a_plain_mapping_works_too() -> None:
    assert required_tags({}) is NO_REQUIREMENT
    assert required_tags({REQUIRE_TAGS_HEADER: "eu"}).tags == {"eu"}


def test_the_traits_carry_the_requirement() -> None:
    body, head = parse_body(CHAT, "chat.completions")
    traits = traits_of("chat.completions", body, head, {REQUIRE_TAGS_HEADER: "eu,local"})
    assert traits.required_tags.tags == {"eu", "local"}
    with pytest.raises(InvalidRequest, match="x-switchyard-require-tags: tag 2"):
        traits_of("chat.completions", body, head, {REQUIRE_TAGS_HEADER: "eu,"})


def _receiver(*messages: dict[str, Any]) -> Callable[[], Awaitable[dict[str, Any]]]:
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    return receive


async def test_the_body_is_read_whole_from_one_or_many_messages() -> None:
    one = _receiver({"type": "http.request", "body": CHAT})
    assert await receive_body(one, RequestHeaders([]), 1_000) == CHAT
    parts = [{"type": "http.request", "body": b, "more_body": True} for b in (b"ab", b"cd")]
    many = _receiver(*parts, {"type": "http.request", "body": b"e"})
    assert await receive_body(many, RequestHeaders([]), 5) == b"abcde"


async def test_a_body_over_the_limit_is_refused_as_soon_as_it_is_known() -> None:
    declared = RequestHeaders([(b"content-length", b"10")])
    with pytest.raises(PayloadTooLarge):
        await receive_body(_receiver(), declared, 5)  # refused before any read
    with pytest.raises(PayloadTooLarge):
        await receive_body(_receiver({"type": "http.request", "body": b"123456"}), {}, 5)
    chunks = [{"type": "http.request", "body": b"1234", "more_body": True}] * 2
    # A third message would fail the fake receive: the limit stops the reading first.
    with pytest.raises(PayloadTooLarge):
        await receive_body(_receiver(*chunks), RequestHeaders([]), 5)


async def test_a_client_that_leaves_mid_body_ends_the_read() -> None:
    leaving = _receiver(
        {"type": "http.request", "body": b"ab", "more_body": True}, {"type": "http.disconnect"}
    )
    with pytest.raises(ClientDisconnect):
        await receive_body(leaving, RequestHeaders([]), 100)


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "x": 1}],
        [{"content": "no role"}],
        [{"role": "", "content": "empty role"}],
        [{"role": 3, "content": "a number"}],
        [{"role": "user"}, "not an object"],
        [],
        {"role": "user"},
        "a string",
        None,
    ],
    ids=[
        "valid",
        "no-role",
        "empty-role",
        "number-role",
        "not-object",
        "empty",
        "dict",
        "str",
        "null",
    ],
)
def test_chat_messages_are_judged_as_the_full_model_judges_them(messages: object) -> None:
    """The role pre-check only spares work: what is accepted and every refusal's wording
    are those of `ChatHead` validating each message as a model."""
    raw = orjson.dumps({"model": "default", "messages": messages, "max_tokens": 5})
    try:
        expected = ChatHead.model_validate(orjson.loads(raw))
    except ValidationError as full:
        with pytest.raises(InvalidRequest) as refused:
            parse_body(raw, "chat.completions")
        error = full.errors()[0]
        param = ".".join(str(p) for p in error["loc"])
        assert (refused.value.param, refused.value.message) == (param, f"{param}: {error['msg']}")
        return
    body, head = parse_body(raw, "chat.completions")
    assert body == orjson.loads(raw)
    assert len(head.messages) == len(expected.messages)  # type: ignore[attr-defined]
    assert head.model_dump(exclude={"messages"}) == expected.model_dump(exclude={"messages"})

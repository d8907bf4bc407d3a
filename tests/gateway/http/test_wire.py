"""Wire parsing of the placement header: every instance counts, the source is `header`."""

from __future__ import annotations

import pytest
from starlette.datastructures import Headers

from gateway.errors import InvalidRequest
from gateway.http.wire import REQUIRE_TAGS_HEADER, parse_body, required_tags, traits_of
from gateway.placement import NO_REQUIREMENT

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
def test_required_tags_from_headers(raw: list[tuple[bytes, bytes]], tags: set[str]) -> None:
    requirement = required_tags(Headers(raw=raw))
    assert requirement.tags == tags
    assert dict(requirement.sources) == ({"header": tags} if tags else {})


def test_a_plain_mapping_works_too() -> None:
    assert required_tags({}) is NO_REQUIREMENT
    assert required_tags({REQUIRE_TAGS_HEADER: "eu"}).tags == {"eu"}


def test_the_traits_carry_the_requirement() -> None:
    body, head = parse_body(CHAT, "chat.completions")
    traits = traits_of("chat.completions", body, head, {REQUIRE_TAGS_HEADER: "eu,local"})
    assert traits.required_tags.tags == {"eu", "local"}
    with pytest.raises(InvalidRequest, match="x-switchyard-require-tags: tag 2"):
        traits_of("chat.completions", body, head, {REQUIRE_TAGS_HEADER: "eu,"})

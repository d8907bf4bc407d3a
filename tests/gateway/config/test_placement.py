"""Placement tags: the config that declares them, the requirement merged from its sources,
the members a requirement allows, and the header a request adds tags with."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.placement import NO_REQUIREMENT, header_tags, place
from gateway.config.root import parse_config
from gateway.errors import ConfigError, InvalidRequest
from tests.conftest import make_config

HEADER = "x-switchyard-require-tags"


def tagged(**tags: list[str]) -> dict[str, Any]:
    """Route `default` over backends a, b, c with the given tags."""
    urls = {name: f"http://127.0.0.1:{9 + i}/v1" for i, name in enumerate("abc")}
    config = make_config(urls)
    for backend in config["backends"]:
        backend["tags"] = tags.get(backend["name"], [])
    return config


def problems_of(config: dict[str, Any]) -> list[str]:
    try:
        parse_config(config)
    except ConfigError as exc:
        return exc.problems
    return []


@pytest.mark.parametrize(
    ("edit", "problems"),
    [
        (lambda c: None, []),
        (lambda c: c["routes"][0].update(require_tags=["eu"]), []),
        (lambda c: c["routes"][0].update(require_tags=["eu", "local"]), []),
        (
            lambda c: c["routes"][0].update(require_tags=["eu", "no-retention"]),
            ["routes.0.require_tags: no backend of route 'default' has tags eu, no-retention"],
        ),
        (
            lambda c: c["backends"][1].update(tags=["EU"]),
            ["backends.1.tags.0: String should match pattern '^[a-z0-9][a-z0-9._:-]*$'"],
        ),
        (
            lambda c: c["backends"][0].update(tags=["eu", "has space"]),
            ["backends.0.tags.1: String should match pattern '^[a-z0-9][a-z0-9._:-]*$'"],
        ),
        (
            lambda c: c["backends"][0].update(tags=["x" * 65]),
            ["backends.0.tags.0: String should have at most 64 characters"],
        ),
        (
            lambda c: c["backends"][0].update(tags="eu"),
            ["backends.0.tags: Input should be a valid list"],
        ),
        (
            lambda c: c["routes"][0].update(require_tags=["-eu"]),
            ["routes.0.require_tags.0: String should match pattern '^[a-z0-9][a-z0-9._:-]*$'"],
        ),
    ],
    ids=[
        "valid",
        "route-requires-a-held-tag",
        "route-requires-two-tags-one-member-holds",
        "no-member-holds-them",
        "uppercase-tag",
        "space-in-tag",
        "tag-too-long",
        "tags-not-a-list",
        "required-tag-malformed",
    ],
)
def test_config_validation(edit: Any, problems: list[str]) -> None:
    config = tagged(a=["eu", "local"], b=["us"])
    edit(config)
    assert problems_of(config) == problems


def test_tags_are_read_into_the_config() -> None:
    config = tagged(a=["eu", "local"])
    config["routes"][0]["require_tags"] = ["eu"]
    parsed = parse_config(config)
    assert parsed.backend("a").tags == ["eu", "local"] and parsed.backend("c").tags == []
    assert parsed.routes[0].require_tags == ["eu"]


def test_a_requirement_merges_its_sources_and_never_relaxes() -> None:
    route = NO_REQUIREMENT.require("route:eu-chat", ["eu"])
    both = route.require("header", ["no-retention", "eu"])
    assert both.tags == {"eu", "no-retention"}
    assert both.describe() == {
        "require_tags": ["eu", "no-retention"],
        "sources": {"route:eu-chat": ["eu"], "header": ["eu", "no-retention"]},
    }
    assert both.require("header", ["eu"]) is both, "nothing new: the same requirement"
    assert both.require("key:k1", []) is both
    more = both.require("header", ["local"])
    assert more.tags == {"eu", "no-retention", "local"}
    assert dict(more.sources)["header"] == {"eu", "no-retention", "local"}


@pytest.mark.parametrize(
    ("required", "allowed", "excluded"),
    [
        ((), ("a", "b", "c"), {}),
        (("eu",), ("a", "c"), {"b": {"eu"}}),
        (("eu", "no-retention"), ("c",), {"a": {"no-retention"}, "b": {"eu", "no-retention"}}),
        (("gpu",), (), {"a": {"gpu"}, "b": {"gpu"}, "c": {"gpu"}}),
    ],
    ids=["nothing-required", "one-tag", "two-tags", "none-holds-it"],
)
def test_place_keeps_the_route_order(
    required: tuple[str, ...], allowed: tuple[str, ...], excluded: dict[str, set[str]]
) -> None:
    tags = {
        "a": frozenset({"eu", "local"}),
        "b": frozenset({"us"}),
        "c": frozenset({"eu", "no-retention"}),
    }
    placement = place("r", ("a", "b", "c"), tags, NO_REQUIREMENT.require("header", required))
    assert placement.allowed == allowed
    assert placement.excluded == excluded
    assert placement.unmet == (not allowed)


def test_an_unmet_placement_names_the_route_and_tags() -> None:
    requirement = NO_REQUIREMENT.require("header", ["no-retention", "eu"])
    placement = place("x", ("a",), {"a": frozenset()}, requirement)
    assert placement.message() == "no backend of route 'x' has tags eu, no-retention"
    assert placement.describe()["excluded"] == {"a": "missing tags: eu, no-retention"}


@pytest.mark.parametrize(
    ("values", "tags"),
    [
        (["eu"], {"eu"}),
        (["eu,no-retention"], {"eu", "no-retention"}),
        ([" EU , No-Retention "], {"eu", "no-retention"}),
        (["eu,eu"], {"eu"}),
        (["eu", "local"], {"eu", "local"}),
        ([""], set()),
        (["  "], set()),
        (["zone:eu-west-1.a_b"], {"zone:eu-west-1.a_b"}),
        ([",".join(f"t{i}" for i in range(16))], {f"t{i}" for i in range(16)}),
    ],
    ids=[
        "one",
        "two",
        "spaces-and-case",
        "duplicate",
        "repeated-header",
        "empty",
        "blank",
        "punctuation",
        "sixteen",
    ],
)
def test_header_tags(values: list[str], tags: set[str]) -> None:
    assert header_tags(values, HEADER) == tags


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["eu,"], "tag 2 ('') is not a tag: 1-64 characters of a-z"),
        (["eu,,local"], "tag 2 ('') is not a tag"),
        (["eu west"], "tag 1 ('eu west') is not a tag"),
        (["-eu"], "tag 1 ('-eu') is not a tag"),
        (["é"], "tag 1 ('é') is not a tag"),
        (["eu;local"], "tag 1 ('eu;local') is not a tag"),
        (["x" * 65], f"tag 1 ('{'x' * 64}'…) is not a tag"),
        ([",".join(f"t{i}" for i in range(17))], "17 tags; at most 16 may be required"),
        (["a," * 1100], "longer than 2048 characters"),
    ],
    ids=[
        "trailing-comma",
        "empty-item",
        "space-inside",
        "leading-dash",
        "non-ascii",
        "semicolon",
        "too-long",
        "too-many",
        "header-too-long",
    ],
)
def test_malformed_header_is_refused_naming_it(values: list[str], message: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        header_tags(values, HEADER)
    assert caught.value.status == 400
    assert caught.value.message.startswith(f"header {HEADER}: ")
    assert message in caught.value.message

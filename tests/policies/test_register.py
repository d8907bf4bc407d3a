"""Registering policy classes: a type name and an alias each name one class."""

from __future__ import annotations

from typing import Any

import pytest

from policies.base import Role
from policies.register import BUILTIN_POLICIES, PolicyRegistry, register_policy


def policy_class(type_name: str, role: Role = "scorer") -> Any:
    """A class with what registering reads: its role and type name."""
    return type(type_name, (), {"role": role, "type_name": type_name})


@pytest.mark.parametrize(
    ("first", "second", "alias", "problem"),
    [
        pytest.param(
            ("cheap-scorer", "scorer"),
            "cheap-scorer",
            True,
            "policy type 'cheap-scorer' is already registered by",
            id="same-type-name",
        ),
        pytest.param(
            ("cheap-scorer", "scorer"),
            "cheap-scorer",
            False,
            "policy type 'cheap-scorer' is already registered by",
            id="same-type-name-without-alias",
        ),
        pytest.param(
            ("cheap-filter", "filter"),
            "cheap-scorer",
            True,
            "policy alias 'cheap' is already registered by",
            id="same-alias",
        ),
    ],
)
def test_a_name_already_taken_is_refused(
    first: tuple[str, Role], second: str, alias: bool, problem: str
) -> None:
    registry = PolicyRegistry()
    original = policy_class(*first)
    registry.add(original)
    with pytest.raises(ValueError, match=problem):
        registry.add(policy_class(second), alias=alias)
    # The refused class left nothing behind.
    assert dict(registry.names()) == {first[0]: original, "cheap": original}


def test_alias_false_registers_the_type_name_only() -> None:
    registry = PolicyRegistry()
    taken, other = policy_class("cheap-filter", "filter"), policy_class("cheap-scorer")
    registry.add(taken)
    registry.add(other, alias=False)
    assert dict(registry.names()) == {"cheap-filter": taken, "cheap-scorer": other, "cheap": taken}


@pytest.mark.parametrize("type_name", ["cheap-filter", "cheap", "cheapscorer"])
def test_a_type_name_without_its_role_suffix_is_refused(type_name: str) -> None:
    with pytest.raises(ValueError, match="does not end in '-scorer'"):
        PolicyRegistry().add(policy_class(type_name))


def test_register_policy_refuses_a_second_built_in_of_a_taken_type() -> None:
    """The decorator fills the built-ins' registry, bare or with arguments."""
    twin = policy_class("healthy-filter", "filter")
    for decorate in (register_policy, register_policy(alias=False)):
        with pytest.raises(ValueError, match="policy type 'healthy-filter' is already registered"):
            decorate(twin)
    assert BUILTIN_POLICIES.names()["healthy-filter"] is not twin

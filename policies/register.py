"""How a built-in policy class enters the registry: the `@register_policy` decorator.

A policy module decorates its class; `policies.builtins` imports the modules. This module
imports no policy, so any policy module may import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Generic, Protocol, TypeVar, overload

from policies.base import Policy, Role


class PolicyFactory(Protocol):
    """A policy class: a `role`, a nested `Params` model (see `registry.params_model`), and
    `cls(name, params)` returning a filter, scorer or picker."""

    @property
    def role(self) -> Role: ...

    def __call__(self, name: str, params: Any) -> Policy: ...


class BuiltinPolicy(PolicyFactory, Protocol):
    """A factory that can be registered: it also names its type."""

    @property
    def type_name(self) -> str: ...


class Registrable(Protocol):
    """What a registry needs of a class: its role and its type name."""

    @property
    def role(self) -> Role: ...

    @property
    def type_name(self) -> str: ...


F = TypeVar("F", bound=BuiltinPolicy)
R = TypeVar("R", bound=Registrable)


class PolicyRegistry(Generic[R]):
    """Policy classes by `type_name`, and by the alias without the role suffix (as in
    SGLang's policy factory: `least-load` for `least-load-scorer`). The routing policies
    have one, the queue's order policies (`policies.order`) another."""

    def __init__(self) -> None:
        self._canonical: dict[str, R] = {}
        self._aliases: dict[str, R] = {}

    def add(self, factory: R, *, alias: bool = True) -> None:
        """Record `factory`; a type name without its role suffix, or a type name or alias
        already taken, is refused (ValueError)."""
        type_name = factory.type_name
        short = type_name.rsplit("-", 1)[0]
        if not type_name.endswith(f"-{factory.role}"):
            raise ValueError(f"policy type {type_name!r} does not end in '-{factory.role}'")
        if type_name in self._canonical:
            taken = self._canonical[type_name]
            raise ValueError(f"policy type {type_name!r} is already registered by {taken!r}")
        if alias and short in self._aliases:
            taken = self._aliases[short]
            raise ValueError(f"policy alias {short!r} is already registered by {taken!r}")
        self._canonical[type_name] = factory
        if alias:
            self._aliases[short] = factory

    def names(self) -> Mapping[str, R]:
        """Every type name, then every alias, each sorted (whatever order the modules were
        imported in); read-only."""
        canonical, aliases = sorted(self._canonical.items()), sorted(self._aliases.items())
        return MappingProxyType(dict(canonical + aliases))


BUILTIN_POLICIES = PolicyRegistry[BuiltinPolicy]()
"""The built-ins' registry, filled as `policies.builtins` imports their modules."""


@overload
def register_policy(factory: F, /) -> F: ...


@overload
def register_policy(*, alias: bool = True) -> Callable[[F], F]: ...


def register_policy(factory: F | None = None, /, *, alias: bool = True) -> F | Callable[[F], F]:
    """Class decorator: register a built-in policy under its `type_name` and, unless
    `alias=False`, its short alias. Use bare (`@register_policy`) or with arguments."""

    def register(cls: F) -> F:
        BUILTIN_POLICIES.add(cls, alias=alias)
        return cls

    return register if factory is None else register(factory)

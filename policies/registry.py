"""Finding a policy class by type name (a built-in or its alias, or a user's class by
dotted path) and creating it from its declaration with validated params."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import cast

from pydantic import ValidationError

from policies.base import Policy, PolicyParams
from policies.builtins import BUILTINS
from policies.config import PolicyConfig
from policies.register import PolicyFactory


class PolicyConfigError(ValueError):
    """Policies or profiles that cannot be built; each problem names its YAML path."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


METHOD_FOR_ROLE: Mapping[str, str] = MappingProxyType(
    {"filter": "filter", "scorer": "score", "picker": "pick"}
)


def params_model(factory: object) -> type[PolicyParams]:
    """The factory's `Params` class (mypy cannot state a nested class in a protocol)."""
    model: type[PolicyParams] = getattr(factory, "Params")  # noqa: B009
    return model


def resolve(type_name: str) -> PolicyFactory:
    """A built-in type or alias, else a class loaded from `pkg.module:Class` or
    `pkg.module.Class`; raises `PolicyConfigError` with one path-less problem."""
    if type_name in BUILTINS:
        return BUILTINS[type_name]
    if ":" not in type_name and "." not in type_name:
        known = ", ".join(sorted(BUILTINS))
        raise PolicyConfigError([f"unknown policy type {type_name!r} (built-ins: {known})"])
    cls = import_dotted(type_name)
    _check_policy_class(type_name, cls)
    return cast(PolicyFactory, cls)


def create(cfg: PolicyConfig, *, path: str = "policy") -> Policy:
    """Instantiate `cfg` with validated params; problems are prefixed with `path`
    (the YAML path of the policy entry, e.g. `policies.2`)."""
    try:
        factory = resolve(cfg.type)
    except PolicyConfigError as exc:
        raise PolicyConfigError([f"{path}.type: {p}" for p in exc.problems]) from None
    try:
        params = params_model(factory).model_validate(cfg.params)
    except ValidationError as exc:
        raise PolicyConfigError(_describe(exc, f"{path}.params")) from None
    return factory(cfg.name, params)


def import_dotted(dotted: str) -> object:
    """The object named by `pkg.module:attr` or `pkg.module.attr`; PolicyConfigError."""
    module_name, sep, attr = dotted.partition(":")
    if not sep:
        module_name, _, attr = dotted.rpartition(".")
    if not module_name or not attr:
        raise PolicyConfigError([f"{dotted!r} is not 'package.module:ClassName'"])
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PolicyConfigError([f"cannot import {module_name!r}: {exc}"]) from None
    try:
        return cast(object, getattr(module, attr))
    except AttributeError:
        raise PolicyConfigError([f"module {module_name!r} has no attribute {attr!r}"]) from None


def _check_policy_class(dotted: str, cls: object) -> None:
    if not isinstance(cls, type):
        raise PolicyConfigError([f"{dotted!r} is not a class"])
    role = getattr(cls, "role", None)
    method = METHOD_FOR_ROLE.get(role) if isinstance(role, str) else None
    if method is None:
        raise PolicyConfigError([f"{dotted!r} has no role (one of filter, scorer, picker)"])
    params = getattr(cls, "Params", None)
    if not (isinstance(params, type) and issubclass(params, PolicyParams)):
        raise PolicyConfigError([f"{dotted!r} has no Params subclassing PolicyParams"])
    if not callable(getattr(cls, method, None)):
        raise PolicyConfigError([f"{dotted!r} is a {role} without a {method}() method"])


def _describe(exc: ValidationError, prefix: str) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"])
        problems.append(f"{prefix}.{loc}: {err['msg']}" if loc else f"{prefix}: {err['msg']}")
    return problems

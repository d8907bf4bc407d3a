"""Built-in policy types, aliases, and loading a user's policy class by dotted path."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, cast

from pydantic import ValidationError

from policies.base import Policy, PolicyParams, Role
from policies.bounded_load_filter import BoundedLoadFilter
from policies.capacity_filter import CapacityFilter
from policies.healthy_filter import HealthyFilter
from policies.kv_cost_scorer import KvCostScorer
from policies.least_load_scorer import LeastLoadScorer
from policies.load_scorer import LoadScorer
from policies.max_score_picker import MaxScorePicker
from policies.model_match_filter import ModelMatchFilter
from policies.prefix_cache_scorer import PrefixCacheScorer
from policies.quality_filter import QualityFilter
from policies.quality_scorer import QualityScorer
from policies.random_scorer import RandomScorer
from policies.round_robin_scorer import RoundRobinScorer
from policies.session_affinity_scorer import SessionAffinityScorer
from policies.sla_filter import SlaFilter
from policies.weighted_random_picker import WeightedRandomPicker

if TYPE_CHECKING:
    from gateway.config import PolicyConfig


class PolicyConfigError(ValueError):
    """Policies or profiles that cannot be built; each problem names its YAML path."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class PolicyFactory(Protocol):
    """A policy class: a `role`, a nested `Params` model (see `params_model`), and
    `cls(name, params)` returning a filter, scorer or picker."""

    @property
    def role(self) -> Role: ...

    def __call__(self, name: str, params: Any) -> Policy: ...


METHOD_FOR_ROLE: Mapping[str, str] = MappingProxyType(
    {"filter": "filter", "scorer": "score", "picker": "pick"}
)

_CANONICAL: dict[str, PolicyFactory] = {
    ModelMatchFilter.type_name: ModelMatchFilter,
    HealthyFilter.type_name: HealthyFilter,
    CapacityFilter.type_name: CapacityFilter,
    BoundedLoadFilter.type_name: BoundedLoadFilter,
    SlaFilter.type_name: SlaFilter,
    QualityFilter.type_name: QualityFilter,
    RoundRobinScorer.type_name: RoundRobinScorer,
    RandomScorer.type_name: RandomScorer,
    LeastLoadScorer.type_name: LeastLoadScorer,
    SessionAffinityScorer.type_name: SessionAffinityScorer,
    PrefixCacheScorer.type_name: PrefixCacheScorer,
    LoadScorer.type_name: LoadScorer,
    KvCostScorer.type_name: KvCostScorer,
    QualityScorer.type_name: QualityScorer,
    MaxScorePicker.type_name: MaxScorePicker,
    WeightedRandomPicker.type_name: WeightedRandomPicker,
}

# Short names without the role suffix, as in SGLang's policy factory.
_ALIASES: dict[str, PolicyFactory] = {
    name.rsplit("-", 1)[0]: factory for name, factory in _CANONICAL.items()
}

BUILTINS: Mapping[str, PolicyFactory] = MappingProxyType(_CANONICAL | _ALIASES)


def params_model(factory: PolicyFactory) -> type[PolicyParams]:
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
    cls = _import(type_name)
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


def _import(dotted: str) -> object:
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

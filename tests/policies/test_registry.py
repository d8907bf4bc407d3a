from __future__ import annotations

import re

import pytest

from policies.builtins import BUILTINS
from policies.config import PolicyConfig
from policies.filters.bounded_load_filter import BoundedLoadFilter
from policies.filters.sla_filter import SlaFilter
from policies.pickers.weighted_random_picker import WeightedRandomPicker
from policies.registry import PolicyConfigError, create, params_model, resolve
from policies.scorers.kv_cost_scorer import KvCostScorer
from policies.scorers.load_scorer import LoadScorer
from policies.scorers.prefix_cache_scorer import PrefixCacheScorer
from policies.scorers.round_robin_scorer import RoundRobinScorer
from tests.policies import user_plugins

CANONICAL = {
    name: factory
    for name, factory in BUILTINS.items()
    if name.endswith(("-filter", "-scorer", "-picker"))
}


def test_nineteen_builtins_each_kebab_case_with_its_role_suffix() -> None:
    assert len(CANONICAL) == 19
    for name, factory in CANONICAL.items():
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", name)
        assert name.endswith(f"-{factory.role}")
        assert getattr(factory, "type_name") == name  # noqa: B009
        params_model(factory)()  # every built-in works with default params


@pytest.mark.parametrize(
    ("alias", "factory"),
    [
        ("round-robin", RoundRobinScorer),
        ("weighted-random", WeightedRandomPicker),
        ("prefix-cache", PrefixCacheScorer),
        ("load", LoadScorer),
        ("kv-cost", KvCostScorer),
        ("sla", SlaFilter),
        ("bounded-load", BoundedLoadFilter),
    ],
)
def test_aliases(alias: str, factory: object) -> None:
    assert resolve(alias) is factory


@pytest.mark.parametrize(
    "dotted",
    ["tests.policies.user_plugins:FixedScorer", "tests.policies.user_plugins.FixedScorer"],
)
def test_resolves_a_user_class_by_dotted_path(dotted: str) -> None:
    assert resolve(dotted) is user_plugins.FixedScorer


@pytest.mark.parametrize(
    ("type_name", "problem"),
    [
        ("fastest-scorer", "unknown policy type 'fastest-scorer' (built-ins: "),
        ("no_such_pkg.mod:Thing", "cannot import 'no_such_pkg.mod': No module named"),
        ("tests.policies.user_plugins:Missing", "has no attribute 'Missing'"),
        ("tests.policies.user_plugins:NOT_A_CLASS", "is not a class"),
        ("tests.policies.user_plugins:NoRole", "has no role (one of filter, scorer, picker)"),
        ("tests.policies.user_plugins:ScorerWithoutScore", "is a scorer without a score() method"),
        ("tests.policies.user_plugins:ScorerWithoutParams", "has no Params subclassing"),
        (":Thing", "is not 'package.module:ClassName'"),
    ],
)
def test_resolve_errors(type_name: str, problem: str) -> None:
    with pytest.raises(PolicyConfigError) as err:
        resolve(type_name)
    assert problem in err.value.problems[0]


@pytest.mark.parametrize(
    ("cfg", "problems"),
    [
        (
            {"type": "weighted-random-picker", "name": "wr", "params": {"temperature": 0}},
            ["policies.2.params.temperature: Input should be greater than 0"],
        ),
        (
            {"type": "least-load-scorer", "name": "ll", "params": {"relative": "x", "bogus": 1}},
            [
                "policies.2.params.relative: Input should be a valid boolean, unable to "
                "interpret input",
                "policies.2.params.bogus: Extra inputs are not permitted",
            ],
        ),
        (
            {"type": "bounded-load-filter", "name": "b", "params": {"by": "bytes"}},
            ["policies.2.params.by: Input should be 'requests' or 'tokens'"],
        ),
        (
            {"type": "kv-cost-scorer", "name": "k", "params": {"prefill_chunk_tokens": 0}},
            ["policies.2.params.prefill_chunk_tokens: Input should be greater than or equal to 1"],
        ),
        (
            {"type": "nope-scorer", "name": "n"},
            ["policies.2.type: unknown policy type 'nope-scorer' (built-ins: "],
        ),
    ],
)
def test_create_errors_name_the_yaml_path(cfg: dict[str, object], problems: list[str]) -> None:
    with pytest.raises(PolicyConfigError) as err:
        create(PolicyConfig.model_validate(cfg), path="policies.2")
    assert len(err.value.problems) == len(problems)
    for got, expected in zip(err.value.problems, problems, strict=True):
        assert got.startswith(expected)


def test_create_builds_a_named_instance_with_typed_params() -> None:
    cfg = PolicyConfig(type="weighted-random", name="spread", params={"temperature": 0.25})
    policy = create(cfg)
    assert isinstance(policy, WeightedRandomPicker)
    assert (policy.name, policy.params.temperature) == ("spread", 0.25)

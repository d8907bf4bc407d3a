"""Assembling profiles from config: policies created once, plugins placed by role, and
every problem reported with its YAML path."""

from __future__ import annotations

from typing import Any

import pytest

from policies.config import PluginRef, PolicyConfig, ProfileConfig
from policies.profiles import build_pipeline, build_pipelines, pipeline_problems
from policies.registry import PolicyConfigError
from tests.policies.builders import fleet, snapshot
from tests.policies.test_pipeline import FIXED

Declarations = tuple[list[PolicyConfig], list[ProfileConfig]]


def config(policies: list[dict[str, Any]], profiles: list[dict[str, Any]]) -> Declarations:
    """The `policies:` and `profiles:` sections as the host's config hands them over."""
    return (
        [PolicyConfig.model_validate(p) for p in policies],
        [ProfileConfig.model_validate(p) for p in profiles],
    )


def test_user_policy_loaded_by_dotted_path_from_config() -> None:
    cfg = config(
        [{"type": FIXED, "name": "prefer-b", "params": {"values": {"a": 0.1, "b": 0.9}}}],
        [{"name": "balanced", "plugins": [{"ref": "prefer-b"}, {"ref": "weighted-random-picker"}]}],
    )
    pipe = build_pipelines(*cfg)["balanced"]
    assert pipe.picker.name == "weighted-random-picker"
    candidates = fleet("a", "b")
    decision = pipe.decide(snapshot(candidates), candidates, "d")
    assert sorted(decision.order) == ["a", "b"]
    assert decision.candidates[1].scores["prefer-b"].reason == "fixed 0.9"


@pytest.mark.parametrize(
    ("policies", "plugins", "problems"),
    [
        ([], ["healthy-filter", "foo"], ["profiles.0.plugins.1.ref: unknown policy 'foo'"]),
        (
            [],
            ["max-score-picker", "least-load-scorer"],
            ["profiles.0.plugins.0.ref: picker 'max-score-picker' must be the last plugin"],
        ),
        (
            [],
            ["max-score", "weighted-random"],
            [
                "profiles.0.plugins.0.ref: picker 'max-score-picker' must be the last plugin",
                "profiles.0.plugins.1.ref: a profile has one picker; "
                "'weighted-random-picker' comes after 'max-score-picker'",
            ],
        ),
        (
            [],
            ["least-load-scorer", "least-load-scorer"],
            ["profiles.0.plugins.1.ref: 'least-load-scorer' appears twice"],
        ),
        (
            [],
            [{"ref": "healthy-filter", "weight": 2}],
            [
                "profiles.0.plugins.0.weight: only scorers take a weight; "
                "'healthy-filter' is a filter"
            ],
        ),
        (
            [
                {"type": "least-load-scorer", "name": "ok"},
                {"type": "weighted-random-picker", "name": "hot", "params": {"temperature": -1}},
            ],
            ["ok", "hot"],  # the broken 'hot' is reported once, under policies
            ["policies.1.params.temperature: Input should be greater than 0"],
        ),
    ],
)
def test_config_errors_name_the_yaml_path(
    policies: list[dict[str, Any]], plugins: list[Any], problems: list[str]
) -> None:
    refs = [p if isinstance(p, dict) else {"ref": p} for p in plugins]
    with pytest.raises(PolicyConfigError) as err:
        build_pipelines(*config(policies, [{"name": "balanced", "plugins": refs}]))
    assert err.value.problems == problems


def test_build_pipelines_collects_problems_from_every_profile() -> None:
    cfg = config(
        [],
        [
            {"name": "balanced", "plugins": [{"ref": "nope"}]},
            {"name": "sticky", "plugins": [{"ref": "max-score-picker"}, {"ref": "random"}]},
        ],
    )
    with pytest.raises(PolicyConfigError) as err:
        build_pipelines(*cfg)
    assert err.value.problems == [
        "profiles.0.plugins.0.ref: unknown policy 'nope'",
        "profiles.1.plugins.0.ref: picker 'max-score-picker' must be the last plugin",
    ]


def test_build_pipelines_keys_by_profile_and_keeps_declared_order() -> None:
    cfg = config(
        [{"type": "least-load-scorer", "name": "load", "params": {"relative": False}}],
        [
            {"name": "balanced", "plugins": [{"ref": "healthy"}, {"ref": "load", "weight": 2}]},
            {"name": "sticky", "plugins": [{"ref": "session-affinity-scorer"}]},
        ],
    )
    pipes = build_pipelines(*cfg)
    assert list(pipes) == ["balanced", "sticky"]
    balanced = pipes["balanced"]
    assert [f.name for f in balanced.filters] == ["healthy-filter"]
    assert [(s.scorer.name, s.weight) for s in balanced.scorers] == [("load", 2.0)]


@pytest.mark.parametrize(
    ("plugins", "problems"),
    [
        (["least-load", "least-load-scorer"], ["plugins.1.ref: 'least-load-scorer' appears twice"]),
        (["healthy", "nope"], ["plugins.1.ref: unknown policy 'nope'"]),
        (["healthy-filter", "least-load"], []),
    ],
)
def test_build_pipeline_names_the_profile_index(plugins: list[str], problems: list[str]) -> None:
    """An alias and the full type name are the same plugin; a profile's problems carry the
    index it has in the `profiles:` section."""
    profile = ProfileConfig(name="p", plugins=[PluginRef(ref=r) for r in plugins])
    if not problems:
        pipe = build_pipeline(profile, [], profile_index=3)
        assert [f.name for f in pipe.filters] == ["healthy-filter"]
        assert [s.scorer.name for s in pipe.scorers] == ["least-load-scorer"]
        assert pipe.picker.name == "max-score-picker"  # appended when none is declared
        return
    with pytest.raises(PolicyConfigError) as err:
        build_pipeline(profile, [], profile_index=3)
    assert err.value.problems == [f"profiles.3.{p}" for p in problems]


def test_pipeline_problems_are_what_building_raises() -> None:
    policies, profiles = config(
        [
            {"type": "least-load-scorer", "name": "ll", "params": {"bogus": 1}},
            {"type": "healthy-filter", "name": "up"},
        ],
        [
            {"name": "a", "plugins": [{"ref": "ll"}, {"ref": "up", "weight": 3}]},
            {"name": "b", "plugins": [{"ref": "missing"}, {"ref": "up"}]},
        ],
    )
    expected = [
        "policies.0.params.bogus: Extra inputs are not permitted",
        "profiles.0.plugins.1.weight: only scorers take a weight; 'up' is a filter",
        "profiles.1.plugins.0.ref: unknown policy 'missing'",
    ]
    assert pipeline_problems(policies, profiles) == expected
    with pytest.raises(PolicyConfigError) as err:
        build_pipelines(policies, profiles)
    assert err.value.problems == expected
    assert pipeline_problems(*config([], [{"name": "ok", "plugins": [{"ref": "random"}]}])) == []

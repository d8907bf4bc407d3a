"""The `cascades` section as `parse_config` validates it: a cascade's routes, names and
checks, every problem at once, each with its YAML path."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.root import parse_config
from gateway.errors import ConfigError
from tests.conftest import make_config


def config_with(*cascades: dict[str, Any]) -> dict[str, Any]:
    config = make_config({"small": "http://127.0.0.1:9/v1", "strong": "http://127.0.0.1:10/v1"})
    config["routes"] = [
        {"name": "cheap", "model": "emulated-model", "backends": ["small"]},
        {"name": "best", "model": "emulated-model", "backends": ["strong"]},
    ]
    config["cascades"] = list(cascades)
    return config


def cascade(**fields: Any) -> dict[str, Any]:
    return {"name": "auto", "tiers": ["cheap", "best"], "checks": ["empty"]} | fields


def problems_of(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        parse_config(config)
    return raised.value.problems


def test_a_valid_cascade_parses() -> None:
    parsed = parse_config(
        config_with(
            cascade(
                checks=["empty", {"check": "loop", "params": {"min_repeats": 3}}],
                judge={"route": "best"},
                streaming={"mode": "commit"},
                start={"learned": False},
            )
        )
    )
    (auto,) = parsed.cascades
    assert auto.name == "auto"
    assert auto.tiers == ["cheap", "best"]
    assert [(c.check, c.params) for c in auto.checks] == [
        ("empty", {}),
        ("loop", {"min_repeats": 3}),
    ]
    assert auto.judge is not None and auto.judge.route == "best"
    assert auto.streaming.mode == "commit"
    assert not auto.start.learned


def test_no_cascades_is_valid() -> None:
    assert parse_config(config_with()).cascades == []


@pytest.mark.parametrize(
    ("cascades", "problem"),
    [
        pytest.param(
            [cascade(tiers=["cheap", "nowhere"])],
            "cascades.0.tiers.1: unknown route 'nowhere'",
            id="unknown-tier-route",
        ),
        pytest.param(
            [cascade(name="cheap")],
            "cascades.0.name: 'cheap' is also a route's name",
            id="named-like-a-route",
        ),
        pytest.param(
            [cascade(), cascade(tiers=["best", "cheap"])],
            "cascades.1.name: duplicate name 'auto'",
            id="duplicate-name",
        ),
        pytest.param(
            [cascade(tiers=["cheap", "best", "cheap"])],
            "cascades.0.tiers: a route appears twice",
            id="route-twice",
        ),
        pytest.param(
            [cascade(checks=["empty", "nope"])],
            "cascades.0.checks.1.check: unknown check 'nope' (built-ins: cut_short, empty, "
            "logprob, loop, refusal, response_format, tool_calls; or module:name)",
            id="unknown-check",
        ),
        pytest.param(
            [cascade(checks=[{"check": "logprob", "params": {"min_mean": 1}}])],
            "cascades.0.checks.0.params.min_mean: Input should be less than or equal to 0",
            id="bad-params",
        ),
        pytest.param(
            [cascade(judge={"route": "oracle"})],
            "cascades.0.judge.route: unknown route 'oracle'",
            id="unknown-judge-route",
        ),
    ],
)
def test_a_broken_cascade_is_a_problem_at_its_path(
    cascades: list[dict[str, Any]], problem: str
) -> None:
    assert problems_of(config_with(*cascades)) == [problem]


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"tiers": ["cheap"]}, "cascades.0.tiers: List should have at least 2 items"),
        ({"checks": []}, "cascades.0.checks: List should have at least 1 item"),
        ({"streaming": {"mode": "later"}}, "cascades.0.streaming.mode: Input should be"),
        ({"start": {"failure_rate": 0}}, "cascades.0.start.failure_rate: Input should be"),
        ({"colour": "red"}, "cascades.0.colour: Extra inputs are not permitted"),
    ],
)
def test_a_malformed_cascade_is_a_problem_at_its_path(fields: dict[str, Any], where: str) -> None:
    (problem,) = problems_of(config_with(cascade(**fields)))
    assert problem.startswith(where)


def test_every_problem_is_reported_at_once() -> None:
    broken = cascade(name="cheap", tiers=["cheap", "gone"], checks=["nope"])
    found = problems_of(config_with(broken))
    assert found[0] == "cascades.0.name: 'cheap' is also a route's name"
    assert found[1] == "cascades.0.tiers.1: unknown route 'gone'"
    assert found[2].startswith("cascades.0.checks.0.check: unknown check 'nope'")
    assert len(found) == 3

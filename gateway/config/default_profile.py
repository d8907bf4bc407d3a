"""The built-in profile: what a config without `profiles` routes with. It is the embedded
example's `cache-aware` profile (`gateway/examples/embedded.yaml`), with the one policy it
names that needs parameters; written as YAML reads, and validated as a user's would be."""

from __future__ import annotations

import copy
from typing import Any

PROFILE_NAME = "cache-aware"

POLICIES: list[dict[str, Any]] = [
    # A request pays for the prefill it adds once for the engine's queue and once for every
    # request already there, so a cached request stays with its cache and a cold one goes
    # where it holds up the fewest others (docs/replay.md has the measurements).
    {
        "type": "kv-cost-scorer",
        "name": "kv-cost",
        "params": {"work_weight": 1.0, "delay_weight": 1.0},
    },
]
PROFILE: dict[str, Any] = {
    "name": PROFILE_NAME,
    "plugins": [
        {"ref": "healthy-filter"},
        {"ref": "placement-filter"},
        {"ref": "context-window-filter"},
        {"ref": "quality-filter"},
        {"ref": "sla-filter"},
        {"ref": "kv-cost", "weight": 3},
        {"ref": "prefix-cache-scorer", "weight": 1},
        {"ref": "load-scorer", "weight": 1},
        {"ref": "max-score-picker"},
    ],
}


def with_builtin_profile(data: dict[str, Any]) -> dict[str, Any]:
    """`data`, a config's top level as read, with the built-in profile when it declares no
    `profiles`, and the policies that profile names which `policies` does not declare (one
    declared under the same name is used instead: that is how to tune it)."""
    if "profiles" in data:
        return data
    declared = data.get("policies", [])
    if not isinstance(declared, list):  # its own problem, reported by its validation
        return {**data, "profiles": [copy.deepcopy(PROFILE)]}
    names = {_name(policy) for policy in declared}
    added = [copy.deepcopy(p) for p in POLICIES if p["name"] not in names]
    return {**data, "policies": [*declared, *added], "profiles": [copy.deepcopy(PROFILE)]}


def _name(policy: object) -> object:
    """A declared policy's name, read as YAML gave it or as a validated `PolicyConfig`."""
    if isinstance(policy, dict):
        return policy.get("name")
    return getattr(policy, "name", None)

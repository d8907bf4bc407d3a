"""Switchyard's routing policies: filter → score → pick, with every reason kept.

A plugin framework that knows nothing of its host. The contracts are in `policies.base`
(what a policy returns) and `policies.snapshot` (what it reads); the YAML schema in
`policies.config`. The host builds one `Pipeline` per profile with
`build_pipelines(policies, profiles)` and calls
`pipeline.decide(snapshot, candidates, decision_id)` per request; `describe_decision`
renders the result for logs and `GET /v1/switchyard/decisions/{id}`. A built-in policy is
one module whose class is decorated with `@register_policy`, imported by `policies.builtins`.

The names below are the public API for plugin authors (`from policies import Score`); each
is imported from its module when first asked for, so importing one part of the framework
does not load every built-in policy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policies.answers import Scores, Verdicts
    from policies.base import (
        Filter,
        Pick,
        Picker,
        Policy,
        PolicyParams,
        Role,
        Score,
        Scorer,
        Verdict,
    )
    from policies.builtins import BUILTINS
    from policies.config import PluginRef, PolicyConfig, ProfileConfig
    from policies.decision import CandidateReport, Decision, Ranked
    from policies.describe import describe_decision
    from policies.pipeline import Pipeline, PolicyContractError, WeightedScorer
    from policies.profiles import build_pipeline, build_pipelines, pipeline_problems
    from policies.register import PolicyFactory, register_policy
    from policies.registry import PolicyConfigError, create, resolve
    from policies.snapshot import BackendView, Endpoint, RequestInfo, Snapshot

_HOMES: dict[str, str] = {
    "BUILTINS": "policies.builtins",
    "BackendView": "policies.snapshot",
    "CandidateReport": "policies.decision",
    "Decision": "policies.decision",
    "Endpoint": "policies.snapshot",
    "Filter": "policies.base",
    "Pick": "policies.base",
    "Picker": "policies.base",
    "Pipeline": "policies.pipeline",
    "PluginRef": "policies.config",
    "Policy": "policies.base",
    "PolicyConfig": "policies.config",
    "PolicyConfigError": "policies.registry",
    "PolicyContractError": "policies.pipeline",
    "PolicyFactory": "policies.register",
    "PolicyParams": "policies.base",
    "ProfileConfig": "policies.config",
    "Ranked": "policies.decision",
    "RequestInfo": "policies.snapshot",
    "Role": "policies.base",
    "Score": "policies.base",
    "Scorer": "policies.base",
    "Scores": "policies.answers",
    "Snapshot": "policies.snapshot",
    "Verdict": "policies.base",
    "Verdicts": "policies.answers",
    "WeightedScorer": "policies.pipeline",
    "build_pipeline": "policies.profiles",
    "build_pipelines": "policies.profiles",
    "create": "policies.registry",
    "describe_decision": "policies.describe",
    "pipeline_problems": "policies.profiles",
    "register_policy": "policies.register",
    "resolve": "policies.registry",
}
"""Each public name and the module that defines it."""

__all__ = [
    "BUILTINS",
    "BackendView",
    "CandidateReport",
    "Decision",
    "Endpoint",
    "Filter",
    "Pick",
    "Picker",
    "Pipeline",
    "PluginRef",
    "Policy",
    "PolicyConfig",
    "PolicyConfigError",
    "PolicyContractError",
    "PolicyFactory",
    "PolicyParams",
    "ProfileConfig",
    "Ranked",
    "RequestInfo",
    "Role",
    "Score",
    "Scorer",
    "Scores",
    "Snapshot",
    "Verdict",
    "Verdicts",
    "WeightedScorer",
    "build_pipeline",
    "build_pipelines",
    "create",
    "describe_decision",
    "pipeline_problems",
    "register_policy",
    "resolve",
]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'policies' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value

"""Switchyard's routing policies: filter → score → pick, with every reason kept.

The gateway builds one `Pipeline` per profile with `build_pipelines(config)` and calls
`pipeline.decide(snapshot, candidates, decision_id)` per request; `describe_decision`
renders the result for logs and `GET /v1/switchyard/decisions/{id}`.
"""

from policies.answers import Scores, Verdicts
from policies.base import (
    BackendView,
    CandidateReport,
    Decision,
    Endpoint,
    Filter,
    Pick,
    Picker,
    Policy,
    PolicyParams,
    Ranked,
    RequestInfo,
    Role,
    Score,
    Scorer,
    Snapshot,
    Verdict,
)
from policies.describe import describe_decision
from policies.pipeline import Pipeline, PolicyContractError, WeightedScorer, build_pipelines
from policies.registry import BUILTINS, PolicyConfigError, PolicyFactory, create, resolve

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
    "Policy",
    "PolicyConfigError",
    "PolicyContractError",
    "PolicyFactory",
    "PolicyParams",
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
    "build_pipelines",
    "create",
    "describe_decision",
    "resolve",
]

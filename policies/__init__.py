"""Switchyard's routing policies: filter → score → pick, with every reason kept.

A plugin framework that knows nothing of its host. The contracts are in `policies.base`
(what a policy returns) and `policies.snapshot` (what it reads); the YAML schema in
`policies.config`. The host builds one `Pipeline` per profile with
`build_pipelines(policies, profiles)` and calls
`pipeline.decide(snapshot, candidates, decision_id)` per request; `describe_decision`
renders the result for logs and `GET /v1/switchyard/decisions/{id}`. A built-in policy is
one module whose class is decorated with `@register_policy`, imported by `policies.builtins`.
"""

from policies.answers import Scores, Verdicts
from policies.base import Filter, Pick, Picker, Policy, PolicyParams, Role, Score, Scorer, Verdict
from policies.builtins import BUILTINS
from policies.config import PluginRef, PolicyConfig, ProfileConfig
from policies.decision import CandidateReport, Decision, Ranked
from policies.describe import describe_decision
from policies.pipeline import Pipeline, PolicyContractError, WeightedScorer
from policies.profiles import build_pipeline, build_pipelines, pipeline_problems
from policies.register import PolicyFactory, register_policy
from policies.registry import PolicyConfigError, create, resolve
from policies.snapshot import BackendView, Endpoint, RequestInfo, Snapshot

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

"""The built-in policies: importing each module registers its class (`@register_policy`).

Adding a built-in is one new module with a decorated class, and one line here.
"""

from __future__ import annotations

from collections.abc import Mapping

from policies import (  # noqa: F401  (imported to register their policies)
    bounded_load_filter,
    capacity_filter,
    context_window_filter,
    cost_scorer,
    healthy_filter,
    kv_cost_scorer,
    least_load_scorer,
    load_scorer,
    max_score_picker,
    model_match_filter,
    placement_filter,
    prefix_cache_scorer,
    quality_filter,
    quality_scorer,
    random_scorer,
    round_robin_scorer,
    session_affinity_scorer,
    sla_filter,
    weighted_random_picker,
)
from policies.register import BUILTIN_POLICIES, BuiltinPolicy

BUILTINS: Mapping[str, BuiltinPolicy] = BUILTIN_POLICIES.names()
"""Every built-in by type name and by alias, read-only; complete once the imports above ran."""

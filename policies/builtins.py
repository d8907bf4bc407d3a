"""The built-in policies: importing each module registers its class (`@register_policy`).

Adding a built-in is one new module with a decorated class, and one line here.
"""

from __future__ import annotations

from collections.abc import Mapping

from policies.filters import (  # noqa: F401  (imported to register their policies)
    bounded_load_filter,
    capacity_filter,
    context_window_filter,
    healthy_filter,
    model_match_filter,
    placement_filter,
    quality_filter,
    sla_filter,
)
from policies.pickers import (  # noqa: F401  (imported to register their policies)
    max_score_picker,
    weighted_random_picker,
)
from policies.register import BUILTIN_POLICIES, BuiltinPolicy
from policies.scorers import (  # noqa: F401  (imported to register their policies)
    cost_scorer,
    kv_cost_scorer,
    least_load_scorer,
    load_scorer,
    prefix_cache_scorer,
    quality_scorer,
    random_scorer,
    round_robin_scorer,
    session_affinity_scorer,
)

BUILTINS: Mapping[str, BuiltinPolicy] = BUILTIN_POLICIES.names()
"""Every built-in by type name and by alias, read-only; complete once the imports above ran."""

"""The built-ins register themselves on import: the same names and aliases as ever."""

from __future__ import annotations

from policies.builtins import BUILTINS
from policies.filters.bounded_load_filter import BoundedLoadFilter
from policies.filters.capacity_filter import CapacityFilter
from policies.filters.context_window_filter import ContextWindowFilter
from policies.filters.healthy_filter import HealthyFilter
from policies.filters.model_match_filter import ModelMatchFilter
from policies.filters.placement_filter import PlacementFilter
from policies.filters.quality_filter import QualityFilter
from policies.filters.sla_filter import SlaFilter
from policies.pickers.max_score_picker import MaxScorePicker
from policies.pickers.weighted_random_picker import WeightedRandomPicker
from policies.scorers.cost_scorer import CostScorer
from policies.scorers.kv_cost_scorer import KvCostScorer
from policies.scorers.least_load_scorer import LeastLoadScorer
from policies.scorers.load_scorer import LoadScorer
from policies.scorers.prefix_cache_scorer import PrefixCacheScorer
from policies.scorers.quality_scorer import QualityScorer
from policies.scorers.random_scorer import RandomScorer
from policies.scorers.round_robin_scorer import RoundRobinScorer
from policies.scorers.session_affinity_scorer import SessionAffinityScorer

# Written out by hand: a profile names these in YAML, so none may appear, vanish or move.
EXPECTED: dict[str, object] = {
    "model-match-filter": ModelMatchFilter,
    "healthy-filter": HealthyFilter,
    "placement-filter": PlacementFilter,
    "capacity-filter": CapacityFilter,
    "context-window-filter": ContextWindowFilter,
    "bounded-load-filter": BoundedLoadFilter,
    "sla-filter": SlaFilter,
    "quality-filter": QualityFilter,
    "round-robin-scorer": RoundRobinScorer,
    "random-scorer": RandomScorer,
    "least-load-scorer": LeastLoadScorer,
    "session-affinity-scorer": SessionAffinityScorer,
    "prefix-cache-scorer": PrefixCacheScorer,
    "load-scorer": LoadScorer,
    "kv-cost-scorer": KvCostScorer,
    "cost-scorer": CostScorer,
    "quality-scorer": QualityScorer,
    "max-score-picker": MaxScorePicker,
    "weighted-random-picker": WeightedRandomPicker,
    "model-match": ModelMatchFilter,
    "healthy": HealthyFilter,
    "placement": PlacementFilter,
    "capacity": CapacityFilter,
    "context-window": ContextWindowFilter,
    "bounded-load": BoundedLoadFilter,
    "sla": SlaFilter,
    "quality": QualityScorer,  # the scorer's; quality-filter has no alias
    "round-robin": RoundRobinScorer,
    "random": RandomScorer,
    "least-load": LeastLoadScorer,
    "session-affinity": SessionAffinityScorer,
    "prefix-cache": PrefixCacheScorer,
    "load": LoadScorer,
    "kv-cost": KvCostScorer,
    "cost": CostScorer,
    "max-score": MaxScorePicker,
    "weighted-random": WeightedRandomPicker,
}


def test_builtins_hold_exactly_the_same_names_and_aliases() -> None:
    assert dict(BUILTINS) == EXPECTED


def test_builtins_list_type_names_then_aliases_each_sorted() -> None:
    names = list(BUILTINS)
    canonical = [n for n in EXPECTED if n.endswith(("-filter", "-scorer", "-picker"))]
    aliases = [n for n in EXPECTED if n not in canonical]
    assert names == sorted(canonical) + sorted(aliases)


def test_builtins_are_read_only() -> None:
    assert not hasattr(BUILTINS, "__setitem__")

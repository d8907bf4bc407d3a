"""The built-in order policies: importing each module registers its class."""

from __future__ import annotations

from collections.abc import Mapping

from policies.order import (  # noqa: F401  (imported to register their policies)
    age_order,
    cache_affinity_order,
    deadline_order,
    fair_share_order,
    short_prefill_order,
)
from policies.order.base import ORDER_POLICIES, OrderFactory

ORDER_BUILTINS: Mapping[str, OrderFactory] = ORDER_POLICIES.names()

"""The YAML schema of a queue's ordering: the order policies and their weights."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class OrderPluginConfig(BaseModel):
    """One order policy of a queue: a built-in type (or alias) or a dotted path."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = Field(min_length=1, description="Built-in type name, alias or dotted path.")
    name: str | None = Field(None, min_length=1, description="Unset: the type name.")
    weight: float = Field(1.0, ge=0)
    params: dict[str, Any] = Field(default_factory=dict)


DEFAULT_ORDER = (
    OrderPluginConfig(type="deadline-order", weight=2.0),
    OrderPluginConfig(type="fair-share-order", weight=1.0),
    OrderPluginConfig(type="cache-affinity-order", weight=1.0),
    OrderPluginConfig(type="age-order", weight=0.5),
)
"""Within a band: nearest deadline first, then the least served tenant, then cache value,
with waiting time breaking what is left."""

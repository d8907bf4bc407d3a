"""What a virtual key may do, as the admin API and `switchyard keys` take it: a new key's
spec and an edit. Wire models only: no store, so the admin API's request bodies are read
without loading the database layer."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from gateway.config.placement import MAX_REQUESTED_TAGS, PlacementTag
from gateway.tenancy.config import OnExhausted

_Label = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:@-]+$")
]
_RouteName = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class KeySpec(BaseModel):
    """What a new key may do, and whose it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=128)
    routes: list[_RouteName] | None = Field(
        None, max_length=256, description="Routes it may use; null: every route."
    )
    tags: list[PlacementTag] = Field(default_factory=list, max_length=MAX_REQUESTED_TAGS)
    rpm: int | None = Field(None, ge=1)
    tpm: int | None = Field(None, ge=1)
    team: _Label | None = None
    owner: str | None = Field(None, min_length=1, max_length=128)
    budget_usd_per_day: float | None = Field(None, gt=0, description="Spend per UTC day.")
    budget_usd_per_month: float | None = Field(None, gt=0, description="Spend per UTC month.")
    budget_on_exhausted: OnExhausted | None = Field(
        None, description="When spent: reject or fallback; null: budgets.keys.on_exhausted."
    )


class KeyChanges(BaseModel):
    """An edit: only the fields given change (`null` clears routes, limits, budgets, team,
    owner)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(None, min_length=1, max_length=128)
    routes: list[_RouteName] | None = Field(None, max_length=256)
    tags: list[PlacementTag] | None = Field(None, max_length=MAX_REQUESTED_TAGS)
    rpm: int | None = Field(None, ge=1)
    tpm: int | None = Field(None, ge=1)
    team: _Label | None = None
    owner: str | None = Field(None, min_length=1, max_length=128)
    budget_usd_per_day: float | None = Field(None, gt=0)
    budget_usd_per_month: float | None = Field(None, gt=0)
    budget_on_exhausted: OnExhausted | None = None

    def columns(self) -> dict[str, Any]:
        given = self.model_dump(exclude_unset=True)
        if given.get("name", "") is None or ("tags" in given and given["tags"] is None):
            raise ValueError("name and tags cannot be null")
        return given


class UnknownRoutes(ValueError):
    pass

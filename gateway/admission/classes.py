"""A request's standing in flow control: its priority class and its tenant, from its
client key, its team and its headers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.errors import InvalidRequest

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gateway.admission.config import FlowControlConfig, PriorityClass
    from gateway.tenancy.caller import Caller

ANONYMOUS = "-"
"""The tenant of a request no source names."""


@dataclass(frozen=True, slots=True)
class Standing:
    """Which class a request is of and whose service it counts towards."""

    cls: PriorityClass
    tenant: str


class Classifier:
    """Reads a request's standing. A key's (or its team's) class is the highest the
    request may claim: the priority header may lower it, never raise it."""

    def __init__(self, config: FlowControlConfig) -> None:
        self._config = config
        self._by_name = {c.name: c for c in config.classes}
        self._by_key = {k: c for c in config.classes for k in c.keys}
        self._by_team = {t: c for c in config.classes for t in c.teams}
        default = config.class_named(config.default_class)
        assert default is not None  # the config's validator saw to it
        self._default = default

    def standing(self, caller: Caller | None, headers: Mapping[str, str]) -> Standing:
        return Standing(self._class(caller, headers), self._tenant(caller, headers))

    def _class(self, caller: Caller | None, headers: Mapping[str, str]) -> PriorityClass:
        keyed = self._keyed(caller)
        asked = headers.get(self._config.priority_header)
        if asked is None:
            return keyed or self._default
        cls = self._by_name.get(asked.strip())
        if cls is None:
            known = ", ".join(self._by_name)
            raise InvalidRequest(
                f"header {self._config.priority_header}: unknown class {asked!r} (known: {known})"
            )
        if keyed is not None and cls.band < keyed.band:
            return keyed
        return cls

    def _keyed(self, caller: Caller | None) -> PriorityClass | None:
        if caller is None:
            return None
        cls = self._by_key.get(caller.key_id)
        if cls is None and caller.team is not None:
            cls = self._by_team.get(caller.team)
        return cls

    def _tenant(self, caller: Caller | None, headers: Mapping[str, str]) -> str:
        tenants = self._config.tenants
        for source in tenants.by:
            if source == "key" and caller is not None:
                return f"key:{caller.key_id}"
            if source == "team" and caller is not None and caller.team:
                return f"team:{caller.team}"
            if source == "header":
                value = headers.get(tenants.header, "").strip()
                if value:
                    return value[:64]
        return ANONYMOUS

"""The queue's order: strict priority bands, weighted order policies within a band, and
ageing that lifts a request one band for every `ageing_s` it has waited (so no class
starves); ties go to the earlier arrival."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from pydantic import ValidationError

from policies.base import Score
from policies.order.base import OrderFactory, OrderPolicy
from policies.order.builtins import ORDER_BUILTINS
from policies.order.config import OrderPluginConfig
from policies.order.snapshot import QueueSnapshot, Waiting
from policies.registry import PolicyConfigError, import_dotted, params_model


@dataclass(frozen=True, slots=True)
class WeightedOrder:
    policy: OrderPolicy
    weight: float


@dataclass(frozen=True, slots=True)
class RankedWaiting:
    """A held request's place in the order, with what put it there."""

    waiting: Waiting
    band: int
    """Its class's band, less what ageing lifted it by."""
    total: float
    scores: Mapping[str, Score]

    def reason(self) -> str:
        """`band 0 (interactive); 1.62 = deadline-order 1.00 (must start within ...), ...`"""
        w = self.waiting
        lifted = f", lifted from {w.band} by waiting" if self.band < w.band else ""
        parts = ", ".join(f"{name} {s.value:.2f} ({s.reason})" for name, s in self.scores.items())
        return f"band {self.band} ({w.priority}{lifted}); {self.total:.2f} = {parts}"


class QueueOrder:
    """Ranks a queue snapshot: band first, then the weighted total, then arrival."""

    def __init__(self, plugins: Sequence[WeightedOrder], *, ageing_s: float | None) -> None:
        self.plugins = tuple(plugins)
        self.ageing_s = ageing_s

    def rank(self, queue: QueueSnapshot) -> list[RankedWaiting]:
        waiting = queue.waiting
        columns = [(p, p.policy.score(queue, waiting)) for p in self.plugins]
        ranked = []
        for i, w in enumerate(waiting):
            scores = {p.policy.name: column[i] for p, column in columns}
            total = sum(p.weight * _clamped(column[i].value) for p, column in columns)
            ranked.append(RankedWaiting(w, self._band(w), total, scores))
        ranked.sort(key=lambda r: (r.band, -r.total, r.waiting.key))
        return ranked

    def _band(self, w: Waiting) -> int:
        if not self.ageing_s:
            return w.band
        return max(0, w.band - int(w.waited_s // self.ageing_s))


def _clamped(value: float) -> float:
    # The framework, not the plugins, keeps scores in range (a NaN counts as 0).
    return min(1.0, max(0.0, value)) if value == value else 0.0


def build_order(
    plugins: Sequence[OrderPluginConfig], *, ageing_s: float | None, path: str
) -> QueueOrder:
    """The order the config declares; `PolicyConfigError` naming each problem's YAML path."""
    built: list[WeightedOrder] = []
    problems: list[str] = []
    names: set[str] = set()
    for i, cfg in enumerate(plugins):
        try:
            policy = _create(cfg, f"{path}.{i}")
        except PolicyConfigError as exc:
            problems += exc.problems
            continue
        if policy.name in names:
            problems.append(f"{path}.{i}.name: {policy.name!r} appears twice")
        names.add(policy.name)
        built.append(WeightedOrder(policy, cfg.weight))
    if problems:
        raise PolicyConfigError(problems)
    return QueueOrder(built, ageing_s=ageing_s)


def _create(cfg: OrderPluginConfig, path: str) -> OrderPolicy:
    factory = _resolve(cfg.type, path)
    try:
        params = params_model(factory).model_validate(cfg.params)
    except ValidationError as exc:
        where = [(".".join(map(str, e["loc"])), e["msg"]) for e in exc.errors()]
        raise PolicyConfigError([f"{path}.params.{loc}: {msg}" for loc, msg in where]) from None
    return factory(cfg.name or factory.type_name, params)


def _resolve(type_name: str, path: str) -> OrderFactory:
    """A built-in order policy or alias, else a class by dotted path."""
    factory = ORDER_BUILTINS.get(type_name)
    if factory is not None:
        return factory
    if ":" not in type_name and "." not in type_name:
        known = ", ".join(sorted(ORDER_BUILTINS))
        raise PolicyConfigError([f"{path}.type: unknown order policy {type_name!r} ({known})"])
    try:
        found = import_dotted(type_name)
    except PolicyConfigError as exc:
        raise PolicyConfigError([f"{path}.type: {p}" for p in exc.problems]) from None
    role, score = getattr(found, "role", None), getattr(found, "score", None)
    if not isinstance(found, type) or role != "order" or not callable(score):
        raise PolicyConfigError([f"{path}.type: {type_name!r} is not an order policy"])
    return cast(OrderFactory, found)

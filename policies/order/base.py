"""The contract of an order policy and how built-ins register (their own registry: an
order policy never appears in a routing profile, nor a routing policy in a queue)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from policies.base import Role, Score
from policies.order.snapshot import QueueSnapshot, Waiting
from policies.register import PolicyRegistry


@runtime_checkable
class OrderPolicy(Protocol):
    """Gives each held request a value in [0, 1]: higher goes sooner within its band."""

    role: ClassVar[Role]
    type_name: ClassVar[str]
    """Kebab-case ending in `-order`, e.g. `fair-share-order`."""
    name: str

    def score(self, queue: QueueSnapshot, waiting: Sequence[Waiting]) -> Sequence[Score]:
        """One score per request of `waiting`, in its order."""
        ...


class OrderFactory(Protocol):
    """An order policy class: its role, type name, nested `Params`, and
    `cls(name, params)`."""

    @property
    def role(self) -> Role: ...

    @property
    def type_name(self) -> str: ...

    def __call__(self, name: str, params: Any) -> OrderPolicy: ...


ORDER_POLICIES = PolicyRegistry[OrderFactory]()
"""The built-in order policies, filled as `policies.order.builtins` imports them."""

F = TypeVar("F", bound=OrderFactory)


def register_order(cls: F) -> F:
    """Class decorator: register a built-in order policy under its type name and alias."""
    ORDER_POLICIES.add(cls)
    return cls

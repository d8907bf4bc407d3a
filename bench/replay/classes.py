"""Priority classes and tenants for a trace's requests: the trace's own, else a seeded rule.

The rule works per session (a request without one is its own session), so a conversation
or an agent run keeps one class and one tenant throughout. Each session's draws come from
blake2b of the seed and the session name, not from Python's `hash` (salted per process)
or a shared random stream (whose draws would depend on the order sessions appear): the
same trace and seed give the same assignment in any run, and a request's assignment does
not change when `--limit` cuts the trace.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .trace import TraceRequest

INTERACTIVE = "interactive"
BATCH = "batch"


@dataclass(frozen=True, slots=True)
class ClassRule:
    """A share of sessions `interactive`, the rest `batch`; tenants `tenant-0` … by weight.

    `tenant_weights` are relative shares of sessions (10, 3, 1: tenant-0 gets 10 of every
    14), not of requests: sessions differ in length.
    """

    seed: int = 0
    interactive_share: float = 0.3
    tenant_weights: tuple[float, ...] = (10.0, 3.0, 1.0)

    def __post_init__(self) -> None:
        if not 0.0 <= self.interactive_share <= 1.0:
            raise ValueError(f"interactive share must be in [0, 1], got {self.interactive_share}")
        if not self.tenant_weights or not all(0 < w < math.inf for w in self.tenant_weights):
            raise ValueError(
                f"tenant weights must be finite and > 0, got {list(self.tenant_weights)}"
            )

    @property
    def tenants(self) -> tuple[str, ...]:
        return tuple(f"tenant-{i}" for i in range(len(self.tenant_weights)))

    def assign(self, session: str) -> tuple[str, str]:
        """The class and tenant of `session` (already keyed: see `session_key`)."""
        digest = hashlib.blake2b(f"{self.seed}\0{session}".encode(), digest_size=16).digest()
        priority = INTERACTIVE if _unit(digest[:8]) < self.interactive_share else BATCH
        bounds = list(itertools.accumulate(self.tenant_weights))
        slot = bisect.bisect_right(bounds, _unit(digest[8:]) * bounds[-1])
        return priority, self.tenants[min(slot, len(bounds) - 1)]  # draw x total may round up

    def describe(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "interactive_share": self.interactive_share,
            "tenant_weights": list(self.tenant_weights),
        }


def _unit(eight: bytes) -> float:
    """Eight hash bytes as a uniform draw in [0, 1): the top 53 bits, exact in a float."""
    return (int.from_bytes(eight, "big") >> 11) / 2.0**53


def session_key(request: TraceRequest) -> str:
    """The session the rule draws for; tagged so that no session name can pose as a
    session-less request's own."""
    if request.session is not None:
        return f"session:{request.session}"
    return f"request:{request.id}"


def with_classes(requests: Sequence[TraceRequest], rule: ClassRule) -> list[TraceRequest]:
    """`requests` with the rule's class and tenant wherever the trace gave none; a field
    the trace sets is kept, the other one still comes from the rule."""
    out = []
    for request in requests:
        if request.priority is not None and request.tenant is not None:
            out.append(request)
            continue
        priority, tenant = rule.assign(session_key(request))
        out.append(
            replace(
                request,
                priority=request.priority if request.priority is not None else priority,
                tenant=request.tenant if request.tenant is not None else tenant,
            )
        )
    return out


def only_tenant(requests: Sequence[TraceRequest], tenant: str) -> list[TraceRequest]:
    """The requests of `tenant`, closed under their dependencies: one whose parent is not
    kept is not kept either (the rule assigns whole sessions, so that only happens where a
    trace's own tenants split one). What the tenant gets when it runs alone."""
    return _closed(requests, lambda r: r.tenant == tenant)


def only_class(requests: Sequence[TraceRequest], priority: str) -> list[TraceRequest]:
    """The requests of class `priority`, closed under their dependencies as `only_tenant`:
    what the class gets when it has the fleet to itself, the ceiling of its goodput."""
    return _closed(requests, lambda r: r.priority == priority)


def _closed(
    requests: Sequence[TraceRequest], keep: Callable[[TraceRequest], bool]
) -> list[TraceRequest]:
    kept: list[TraceRequest] = []
    ids: set[str] = set()
    for request in requests:
        if not keep(request):
            continue
        if request.parent is not None and request.parent not in ids:
            continue
        kept.append(request)
        ids.add(request.id)
    return kept

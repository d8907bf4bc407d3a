"""A health verdict one replica reached about a backend, as its peers receive it.

The detector emits one when it ejects a backend, cools one down (a 429, a spent budget,
an engine not ready with probes off) or records a probe; `HealthShare` carries it to the
other replicas. Times are wall-clock (Unix seconds): replicas' monotonic clocks differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HealthKind = Literal["ejected", "cooled", "probe"]
HEALTH_KINDS: frozenset[str] = frozenset({"ejected", "cooled", "probe"})


@dataclass(frozen=True, slots=True)
class HealthEvent:
    backend: str
    kind: HealthKind
    """ejected: failures in a row; cooled: the backend asked for it (429, spent budget);
    probe: an active probe's result (or an engine saying it is not ready)."""
    reason: str
    at_unix: float
    """When the sending replica decided it."""
    until_unix: float = 0.0
    """ejected, cooled: when the backend may take traffic again."""
    ok: bool = True
    """probe: whether it passed."""

"""References between config sections that neither section's own schema can check:
demo traffic and route limits naming routes that exist."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.config.demo import DemoConfig
    from gateway.config.routes import RouteConfig
    from gateway.tenancy.config import LimitsConfig


def demo_problems(routes: list[RouteConfig] | None, demo: DemoConfig | None) -> list[str]:
    """The demo traffic's routes that no route declares (none when either is invalid)."""
    if routes is None or demo is None:
        return []
    known = {route.name for route in routes}
    return [
        f"demo.routes.{i}: unknown route {name!r}"
        for i, name in enumerate(demo.routes)
        if name not in known
    ]


def limit_problems(routes: list[RouteConfig] | None, limits: LimitsConfig | None) -> list[str]:
    """Route limits naming no route (none when either section is invalid)."""
    if routes is None or limits is None:
        return []
    known = {route.name for route in routes}
    return [f"limits.routes.{name}: unknown route" for name in limits.routes if name not in known]

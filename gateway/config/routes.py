"""A route's configuration: its public name, its members (a backend and the upstream model
asked of it), its profile and SLA targets, the placement tags it requires, and the routes
it falls back to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any

from pydantic import Discriminator, Field, Tag, model_validator

from gateway.config.backends import BackendConfig
from gateway.config.placement import PlacementTag
from gateway.config.strict import StrictConfig


class SlaConfig(StrictConfig):
    """Targets a request should meet; headers x-switchyard-ttft-ms / -tpot-ms override."""

    ttft_ms: float | None = Field(None, gt=0)
    tpot_ms: float | None = Field(None, gt=0)


class MemberConfig(StrictConfig):
    """A route's backend written as a mapping: the upstream model id it is asked for there
    (a local GGUF and a cloud API name the same weights differently) and its window."""

    backend: str = Field(min_length=1)
    model: str | None = Field(None, min_length=1, description="Unset: the route's `model`.")
    context_window_tokens: int | None = Field(
        None, ge=1, description="Overrides the backend's own for this model."
    )


def _member_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "name"
    # The empty tag keeps error paths as written: routes.0.backends.1.model, not ...1.<tag>.
    return "" if isinstance(value, dict | MemberConfig) else None


MemberRef = Annotated[
    Annotated[str, Tag("name")] | Annotated[MemberConfig, Tag("")],
    Discriminator(
        _member_kind,
        custom_error_type="invalid_member",
        custom_error_message="Input should be a backend name or a mapping with `backend`",
    ),
]


@dataclass(frozen=True, slots=True)
class RouteMember:
    """A route's backend as the router uses it: its model and window resolved."""

    backend: str
    model: str
    """The upstream model id written into the request body sent to this backend."""
    context_window_tokens: int | None = None
    """The member's own window; None: the backend's (possibly unknown)."""


class RouteConfig(StrictConfig):
    """A public model name and the backends that serve it, each asked for its own id."""

    name: str = Field(min_length=1, description="What clients send as `model`.")
    model: str = Field(
        min_length=1,
        description="Upstream model name; each member's default. Unset: the route's `name`.",
    )
    backends: list[MemberRef] = Field(min_length=1)
    profile: str | None = Field(
        None, description="Unset: the config's first profile (`Config.profile_of`)."
    )
    sla: SlaConfig = SlaConfig()
    fallbacks: list[str] = Field(
        default_factory=list,
        description="Routes tried in order when none of this route's backends can serve.",
    )
    require_tags: list[PlacementTag] = Field(
        default_factory=list,
        description="Tags a backend must all carry to serve this route, on its fallbacks too.",
    )

    @model_validator(mode="before")
    @classmethod
    def _model_defaults_to_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and "model" not in data and "name" in data:
            return {**data, "model": data["name"]}
        return data

    @cached_property
    def members(self) -> tuple[RouteMember, ...]:
        return tuple(_resolve(ref, self.model) for ref in self.backends)

    @cached_property
    def backend_names(self) -> tuple[str, ...]:
        return tuple(member.backend for member in self.members)

    @cached_property
    def upstream_models(self) -> Mapping[str, str]:
        """The upstream model id per member backend."""
        return {member.backend: member.model for member in self.members}

    def model_for(self, backend: str) -> str:
        return self.upstream_models.get(backend, self.model)


def _resolve(ref: str | MemberConfig, default_model: str) -> RouteMember:
    if isinstance(ref, str):
        return RouteMember(ref, default_model)
    return RouteMember(ref.backend, ref.model or default_model, ref.context_window_tokens)


def route_problems(
    routes: Sequence[RouteConfig],
    backends: Sequence[BackendConfig] | None,
    profile_names: set[str] | None,
) -> list[str]:
    """Every broken reference of the routes: members, profiles and fallbacks, each with its
    YAML path. `backends` or `profile_names` is None when that section failed validation."""
    by_name = {b.name: b for b in backends} if backends is not None else None
    problems: list[str] = []
    for i, route in enumerate(routes):
        problems += _member_problems(i, route, by_name)
        problems += _placement_problems(i, route, by_name)
        if (
            route.profile is not None
            and profile_names is not None
            and route.profile not in profile_names
        ):
            problems.append(f"routes.{i}.profile: unknown profile {route.profile!r}")
    return problems + _fallback_problems(routes)


def _member_problems(
    i: int, route: RouteConfig, backends: Mapping[str, BackendConfig] | None
) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    for j, (ref, member) in enumerate(zip(route.backends, route.members, strict=True)):
        where = f"routes.{i}.backends.{j}"
        name = member.backend
        if name in seen:
            problems.append(f"{where}: backend {name!r} appears twice in this route")
        seen.add(name)
        if backends is None:
            continue
        if name not in backends:
            field = "" if isinstance(ref, str) else ".backend"
            problems.append(f"{where}{field}: unknown backend {name!r}")
        elif member.model not in backends[name].models:
            field = ".model" if isinstance(ref, MemberConfig) and ref.model else ""
            problems.append(
                f"{where}{field}: backend {name!r} does not serve model {member.model!r}"
            )
    return problems


def _placement_problems(
    i: int, route: RouteConfig, backends: Mapping[str, BackendConfig] | None
) -> list[str]:
    """A route whose own `require_tags` none of its members carries could never serve."""
    required = frozenset(route.require_tags)
    if not required or backends is None:
        return []
    known = [backends[name] for name in route.backend_names if name in backends]
    if not known or any(required <= frozenset(b.tags) for b in known):
        return []  # unknown members are reported on their own
    tags = ", ".join(sorted(required))
    return [f"routes.{i}.require_tags: no backend of route {route.name!r} has tags {tags}"]


def _fallback_problems(routes: Sequence[RouteConfig]) -> list[str]:
    """Unknown fallback routes, and each cycle once, at the fallback that closes it."""
    index = {route.name: i for i, route in enumerate(routes)}
    problems = [
        f"routes.{i}.fallbacks.{k}: unknown route {name!r}"
        for i, route in enumerate(routes)
        for k, name in enumerate(route.fallbacks)
        if name not in index
    ]
    done: set[str] = set()
    for route in routes:
        problems += _cycles_from(route.name, routes, index, [], done)
    return problems


def _cycles_from(
    name: str,
    routes: Sequence[RouteConfig],
    index: Mapping[str, int],
    path: list[str],
    done: set[str],
) -> list[str]:
    """Depth-first from `name` (`path`: the routes being visited); a fallback back into
    `path` closes a cycle."""
    if name in done or name not in index:
        return []
    i = index[name]
    path.append(name)
    problems: list[str] = []
    for k, target in enumerate(routes[i].fallbacks):
        if target in path:
            cycle = " → ".join([*path[path.index(target) :], target])
            problems.append(f"routes.{i}.fallbacks.{k}: fallback cycle {cycle}")
        else:
            problems += _cycles_from(target, routes, index, path, done)
    path.pop()
    done.add(name)
    return problems


def fallback_chain(route: RouteConfig, routes: Mapping[str, RouteConfig]) -> tuple[str, ...]:
    """The routes a request for `route` may take, in order: itself, then its fallbacks depth
    first (a fallback's own fallbacks before the next one), each once."""
    chain: list[str] = []

    def visit(name: str) -> None:
        if name in chain:
            return
        chain.append(name)
        for target in routes[name].fallbacks:
            visit(target)

    visit(route.name)
    return tuple(chain)

"""What a discovering entry becomes: one backend per address, and the config the gateway
serves, with each entry replaced by its backends and each route naming it by them.

Pure: the addresses come in, a config comes out. The runtime serves the expanded config
and compares it with the one it serves, as a reload compares two files
(`gateway.process.reload_plan`): a new address is an added backend (its state starts
cold), a gone one a removed backend (its requests in flight finish on the generation they
started on; its state goes with it).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from gateway.config.backends import BackendConfig
from gateway.config.root import Config
from gateway.config.routes import MemberConfig, RouteConfig
from providers.presets import PRESETS

M = TypeVar("M", Config, RouteConfig)

_NO_PRESET_TEMPLATE = "http://discovered/v1"
"""The template of an entry without base_url whose kind has no preset: the port is
`discover.port`'s, the path the OpenAI API's."""


@dataclass(frozen=True, slots=True, order=True)
class Address:
    """One address a lookup found: an IP address and, from an SRV record, its port."""

    host: str
    port: int | None = None


def address_order(address: Address) -> tuple[int, int, int]:
    """IPv4 before IPv6, then by number and port: the same order on every replica."""
    ip = ipaddress.ip_address(address.host)
    return ip.version, int(ip), address.port or 0


def cap(previous: Sequence[Address], found: Collection[Address], limit: int) -> tuple[Address, ...]:
    """At most `limit` of `found`: those in use already first, in their order, then the new
    ones in `address_order`. A full entry keeps its backends (and their state) when an
    answer lists its addresses in another order or adds one."""
    fresh = set(found)
    kept = [address for address in previous if address in fresh]
    new = sorted(fresh.difference(kept), key=address_order)
    return tuple([*kept, *new][:limit])


def template(entry: BackendConfig) -> str:
    """The URL each address is put into: base_url, else the kind's preset's, else
    `http://<address>/v1`."""
    if entry.base_url is not None:
        return entry.base_url
    preset = entry.preset_name
    return PRESETS[preset].base_url if preset is not None else _NO_PRESET_TEMPLATE


def port_of(entry: BackendConfig, address: Address) -> int:
    """The SRV record's port, else `discover.port`, else the template's, else the kind's
    preset's (the config refuses an entry that would have none)."""
    assert entry.discover is not None
    preset = entry.preset_name
    port = next(
        (
            found
            for found in (
                address.port,
                entry.discover.port,
                urlsplit(template(entry)).port,
                urlsplit(PRESETS[preset].base_url).port if preset is not None else None,
            )
            if found is not None
        ),
        None,
    )
    if not port:  # refused by the config (`discover_problem`), port 0 by the resolver
        raise ValueError(f"backend {entry.name}: no port for {address.host}")
    return port


def backend_name(entry: str, host: str, port: int) -> str:
    """`vllm@10.1.2.3:8000`, `vllm@[fd00::1]:8000`: the entry, then where the backend is."""
    return f"{entry}@{_netloc(host, port)}"


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def expansion(entry: BackendConfig, address: Address) -> BackendConfig:
    """The backend `entry` becomes at `address`: its settings, its own name and URL."""
    port = port_of(entry, address)
    parts = urlsplit(template(entry))
    url = urlunsplit(parts._replace(netloc=_netloc(address.host, port)))
    update = {"name": backend_name(entry.name, address.host, port), "base_url": url}
    return entry.model_copy(update={**update, "discover": None})


def summary(entry: BackendConfig) -> str:
    """What `entry` discovers and becomes, in words (`switchyard check`): `A+AAAA records of
    vllm.ns.svc every 10 s, at most 64 backends, each vllm@<address>:8000 at
    http://<address>:8000/v1`."""
    discover = entry.discover
    assert discover is not None
    port = "<port>" if discover.record == "SRV" else str(port_of(entry, Address("0.0.0.0")))
    url = urlsplit(template(entry))._replace(netloc=f"<address>:{port}")
    return (
        f"{discover.record} records of {discover.dns} every {discover.interval_s:g} s, at "
        f"most {discover.max_backends} backends, each {entry.name}@<address>:{port} at "
        f"{urlunsplit(url)}"
    )


def expand(source: Config, found: Mapping[str, Sequence[Address]]) -> Config:
    """`source` with each discovering entry replaced by a backend per address `found` for
    it (none: the entry is empty, and so are its routes' members from it), and each route
    member naming such an entry replaced by one member per backend, in the same place."""
    if all(entry.discover is None for entry in source.backends):
        return source
    backends: list[BackendConfig] = []
    expanded: dict[str, list[str]] = {}
    for entry in source.backends:
        if entry.discover is None:
            backends.append(entry)
            continue
        made = [expansion(entry, address) for address in found.get(entry.name, ())]
        expanded[entry.name] = [backend.name for backend in made]
        backends += made
    routes = [_route(route, expanded) for route in source.routes]
    # Not validated again: `source` was, and the expansion only renames what it named. An
    # entry without addresses leaves its routes with fewer members, possibly none, which
    # the file's schema refuses but serving handles (no candidate: a fallback, or 503).
    return _construct(Config, source, backends=backends, routes=routes)


def _route(route: RouteConfig, expanded: Mapping[str, list[str]]) -> RouteConfig:
    if not any(member.backend in expanded for member in route.members):
        return route
    refs: list[str | MemberConfig] = []
    for ref in route.backends:
        name = ref if isinstance(ref, str) else ref.backend
        if name not in expanded:
            refs.append(ref)
        elif isinstance(ref, str):
            refs += expanded[name]
        else:
            refs += [ref.model_copy(update={"backend": made}) for made in expanded[name]]
    return _construct(RouteConfig, route, backends=refs)


def _construct(cls: type[M], model: M, **update: Any) -> M:
    """A copy of `model` with `update`, its cached properties computed afresh (a
    `model_copy` would carry them over from `model`)."""
    fields = {name: getattr(model, name) for name in cls.model_fields}
    return cls.model_construct(_fields_set=set(model.model_fields_set), **{**fields, **update})

"""What a discovering entry becomes (pure): a backend per address with the entry's
settings, routes naming each, and a bound that keeps the backends in use."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.root import Config, parse_config, reference_problems
from gateway.config.routes import RouteMember
from gateway.discovery.expand import Address, cap, expand
from gateway.process.reload_plan import compare


def source(entry: dict[str, Any], **route: Any) -> Config:
    return parse_config(
        {
            "backends": [
                {"name": "static", "base_url": "http://127.0.0.1:9/v1", "models": ["m", "big"]},
                {"name": "vllm", "models": ["m", "big"], "max_concurrency": 8, **entry},
            ],
            "routes": [
                {"name": "m", "backends": ["static", "vllm"], **route},
                {"name": "big", "backends": [{"backend": "vllm", "context_window_tokens": 4096}]},
            ],
        }
    )


VLLM = {"kind": "vllm", "discover": {"dns": "vllm.ns.svc.cluster.local"}}


def test_each_address_is_a_backend_with_the_entry_settings() -> None:
    config = expand(source(VLLM), {"vllm": [Address("10.1.2.3"), Address("fd00::7")]})
    names = [b.name for b in config.backends]
    assert names == ["static", "vllm@10.1.2.3:8000", "vllm@[fd00::7]:8000"]
    made = config.backend("vllm@[fd00::7]:8000")
    assert made.base_url == "http://[fd00::7]:8000/v1"  # the vllm preset's port and path
    assert made.discover is None
    assert (made.kind, made.max_concurrency, made.models) == ("vllm", 8, ["m", "big"])
    assert made.provider_settings().base_url == "http://[fd00::7]:8000/v1"


def test_routes_name_every_backend_in_the_entry_place() -> None:
    config = expand(source(VLLM), {"vllm": [Address("10.0.0.1"), Address("10.0.0.2")]})
    m, big = config.routes
    assert m.backend_names == ("static", "vllm@10.0.0.1:8000", "vllm@10.0.0.2:8000")
    assert big.members == (
        RouteMember("vllm@10.0.0.1:8000", "big", 4096),
        RouteMember("vllm@10.0.0.2:8000", "big", 4096),
    )
    parts = (config.backends, config.routes, config.policies, config.profiles)
    assert reference_problems(*parts) == []
    assert config.backend_kinds["vllm@10.0.0.2:8000"] == "vllm"


@pytest.mark.parametrize(
    ("entry", "address", "url"),
    [
        (
            {"base_url": "https://engines:9443/api/v1", "discover": {"dns": "e.test"}},
            Address("10.0.0.1"),
            "https://10.0.0.1:9443/api/v1",
        ),
        (
            {"discover": {"dns": "e.test", "port": 7000}},
            Address("10.0.0.1"),
            "http://10.0.0.1:7000/v1",
        ),
        (
            {"kind": "sglang", "discover": {"dns": "_h._tcp.e.test", "record": "SRV"}},
            Address("10.0.0.1", 31000),
            "http://10.0.0.1:31000/v1",
        ),
    ],
    ids=["base-url-template", "discover-port", "srv-port"],
)
def test_the_url_takes_the_template_and_the_address(
    entry: dict[str, Any], address: Address, url: str
) -> None:
    config = expand(source(entry), {"vllm": [address]})
    assert config.backends[1].base_url == url


def test_an_entry_without_addresses_leaves_its_routes_without_its_members() -> None:
    config = expand(source(VLLM), {})
    assert [b.name for b in config.backends] == ["static"]
    assert config.routes[0].backend_names == ("static",)
    assert config.routes[1].backend_names == ()  # served as a route without candidates


def test_a_config_without_discovery_is_served_as_written() -> None:
    plain = source({"base_url": "http://127.0.0.1:8/v1"})
    assert expand(plain, {}) is plain


def test_an_added_and_a_removed_address_are_a_reload_s_added_and_removed_backends() -> None:
    written = source(VLLM)
    before = expand(written, {"vllm": [Address("10.0.0.1"), Address("10.0.0.2")]})
    after = expand(written, {"vllm": [Address("10.0.0.2"), Address("10.0.0.3")]})
    changes = compare(before, after).backends
    assert changes.added == ("vllm@10.0.0.3:8000",)
    assert changes.removed == ("vllm@10.0.0.1:8000",)
    assert changes.unchanged == ("static", "vllm@10.0.0.2:8000")
    same = compare(before, expand(written, {"vllm": [Address("10.0.0.1"), Address("10.0.0.2")]}))
    assert not (same.backends.moved or same.routes.moved)


def test_the_bound_keeps_the_backends_in_use() -> None:
    a, b, c, d = (Address(f"10.0.0.{i}") for i in (1, 2, 3, 4))
    assert cap((), [d, b, c, a], 2) == (a, b)  # lowest first
    assert cap((c, a), [a, b, c, d], 3) == (c, a, b)  # in use kept, then the lowest new
    assert cap((c, a), [b, d], 3) == (b, d)  # gone ones go
    v6, v4 = Address("::1"), Address("192.168.0.1")
    assert cap((), [v6, v4], 2) == (v4, v6)

"""A backend entry's `discover` block: what the schema takes, and what it refuses with the
key at fault."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.root import parse_config
from gateway.discovery.config import nameserver_address
from gateway.errors import ConfigError


def config(entry: dict[str, Any]) -> dict[str, Any]:
    backend = {"name": "vllm", "models": ["m"], **entry}
    return {"backends": [backend], "routes": [{"name": "m", "backends": ["vllm"]}]}


@pytest.mark.parametrize(
    "entry",
    [
        {"kind": "vllm", "discover": {"dns": "vllm.default.svc.cluster.local"}},
        {"kind": "vllm", "discover": {"dns": "vllm.ns.svc.cluster.local.", "record": "A"}},
        {"discover": {"dns": "engines.internal", "port": 8000}},
        {"base_url": "http://engines:9000/v1", "discover": {"dns": "engines.internal"}},
        {"kind": "sglang", "discover": {"dns": "_http._tcp.sglang.ns.svc", "record": "SRV"}},
        {
            "kind": "openai-compatible",
            "preset": "llama-cpp",
            "metrics": {"path": "/metrics"},
            "discover": {"dns": "llama.test", "nameservers": ["127.0.0.1:5353", "[::1]:53"]},
        },
    ],
    ids=["vllm-port-from-preset", "fqdn-dot", "port", "base-url-port", "srv", "preset"],
)
def test_discovering_entries_validate(entry: dict[str, Any]) -> None:
    parsed = parse_config(config(entry))
    assert parsed.backends[0].discover is not None
    assert parsed.backends[0].discover.interval_s == 10.0
    assert parsed.backends[0].discover.max_backends == 64


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            {"kind": "openai", "discover": {"dns": "x.test"}},
            "backends.0.discover: only for engines the operator runs",
        ),
        (
            {"kind": "emulated", "discover": {"dns": "x.test"}},
            "backends.0.discover: only for engines the operator runs",
        ),
        (
            {"preset": "deepseek", "discover": {"dns": "x.test"}},
            "backends.0.discover: only for engines the operator runs",
        ),
        (
            {"discover": {"dns": "x.test"}},
            "backends.0.discover.port: required for A+AAAA records unless base_url names one",
        ),
        (
            {"base_url": "http://x:80/v1", "discover": {"dns": "x.test", "port": 81}},
            "backends.0.discover.port: base_url names a port already",
        ),
        (
            {"kind": "vllm", "discover": {"dns": "_h._tcp.x.test", "record": "SRV", "port": 1}},
            "backends.0.discover.port: SRV records give each address's port",
        ),
        (
            {"base_url": "http://x:80/v1", "discover": {"dns": "_h._tcp.x", "record": "SRV"}},
            "backends.0.base_url: SRV records give each address's port",
        ),
        (
            {"kind": "vllm", "health_url": "http://x/health", "discover": {"dns": "x.test"}},
            "backends.0.health_url: would name one host for every discovered address",
        ),
        (
            {"kind": "vllm", "metrics": {"url": "http://x/m"}, "discover": {"dns": "x.test"}},
            "backends.0.metrics.url: would name one host",
        ),
        (
            {"kind": "vllm", "discover": {"dns": "bad name"}},
            "backends.0.discover.dns: String should match pattern",
        ),
        (
            {"kind": "vllm", "discover": {"dns": "x.test", "nameservers": ["dns.google"]}},
            "backends.0.discover.nameservers.0: not an IP address with an optional port",
        ),
        (
            {"kind": "vllm", "discover": {"dns": "x.test", "max_backends": 0}},
            "backends.0.discover.max_backends: Input should be greater than or equal to 1",
        ),
        (
            {"kind": "vllm", "discover": {"dns": "x.test", "record": "MX"}},
            "backends.0.discover.record: Input should be 'A', 'AAAA', 'A+AAAA' or 'SRV'",
        ),
    ],
)
def test_what_a_discover_block_refuses(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(config(entry))
    assert any(line.startswith(problem) for line in caught.value.problems), caught.value.problems


def test_an_entry_name_cannot_look_like_a_discovered_backend() -> None:
    """`@` is not in an entry's name: `vllm@10.0.0.1:8000` is only ever a discovered one."""
    entry = {"kind": "vllm", "base_url": "http://x:8000/v1"}
    with pytest.raises(ConfigError, match=r"backends\.0\.name"):
        parse_config(config(entry) | {"backends": [{"name": "a@b", "models": ["m"], **entry}]})


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("10.0.0.10", ("10.0.0.10", 53)),
        ("127.0.0.1:5353", ("127.0.0.1", 5353)),
        ("::1", ("::1", 53)),
        ("[fd00::1]:5300", ("fd00::1", 5300)),
    ],
)
def test_nameservers_are_addresses_with_optional_ports(text: str, address: tuple[str, int]) -> None:
    assert nameserver_address(text) == address


@pytest.mark.parametrize("text", ["ns.example", "127.0.0.1:0", "[::1", "1.2.3.4:99999"])
def test_nameservers_refused(text: str) -> None:
    with pytest.raises(ValueError):
        nameserver_address(text)

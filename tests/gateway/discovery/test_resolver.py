"""The DNS lookups against a real DNS server on loopback: addresses, SRV ports with and
without the additional section, authoritative empties, and failures that keep nothing."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from gateway.discovery.config import DiscoverConfig
from gateway.discovery.expand import Address
from gateway.discovery.refresh import LookupFailed
from gateway.discovery.resolver import DnsLookup
from tests.gateway.discovery.dns_server import Zone


def block(nameserver: str, **fields: Any) -> DiscoverConfig:
    return DiscoverConfig.model_validate({"nameservers": [nameserver], **fields})


async def test_a_and_aaaa_records_are_the_addresses(zone: Zone, nameserver: str) -> None:
    zone.set_a("engines.test", "127.0.0.2", "127.0.0.1")
    zone.set_aaaa("engines.test", "::1")
    lookup = DnsLookup()
    both = await lookup(block(nameserver, dns="engines.test"))
    assert sorted(both) == [Address("127.0.0.1"), Address("127.0.0.2"), Address("::1")]
    only_v6 = await lookup(block(nameserver, dns="engines.test", record="AAAA"))
    assert only_v6 == (Address("::1"),)


@pytest.mark.parametrize("glue", [False, True], ids=["targets-looked-up", "additional"])
async def test_srv_records_give_each_target_its_port(
    zone: Zone, nameserver: str, glue: bool
) -> None:
    zone.glue = glue
    zone.set_srv("_http._tcp.engines.test", ("e1.engines.test", 8001), ("e2.engines.test", 8002))
    zone.set_a("e1.engines.test", "127.0.0.1")
    zone.set_a("e2.engines.test", "127.0.0.1", "127.0.0.3")
    found = await DnsLookup()(block(nameserver, dns="_http._tcp.engines.test", record="SRV"))
    assert sorted(found) == [
        Address("127.0.0.1", 8001),
        Address("127.0.0.1", 8002),
        Address("127.0.0.3", 8002),
    ]


async def test_a_name_without_records_has_no_addresses(zone: Zone, nameserver: str) -> None:
    """NXDOMAIN (a headless Service with no ready pod) and an empty answer are answers."""
    zone.set_a("empty.test")
    lookup = DnsLookup()
    assert await lookup(block(nameserver, dns="missing.test")) == ()
    assert await lookup(block(nameserver, dns="empty.test")) == ()
    assert await lookup(block(nameserver, dns="_x._tcp.missing.test", record="SRV")) == ()


async def test_a_server_failure_is_no_answer_to_trust(zone: Zone, nameserver: str) -> None:
    zone.set_a("engines.test", "127.0.0.1")
    zone.failing = True
    with pytest.raises(LookupFailed, match="NoNameservers"):
        await DnsLookup()(block(nameserver, dns="engines.test"))


async def test_a_silent_server_times_out() -> None:
    """A nameserver that never answers: the lookup fails within its timeout."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        port = silent.getsockname()[1]
        discover = block(f"127.0.0.1:{port}", dns="engines.test", timeout_s=0.3)
        with pytest.raises(LookupFailed):
            await DnsLookup()(discover)

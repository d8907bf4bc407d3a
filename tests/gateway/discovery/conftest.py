"""The discovery tests' DNS server: a zone the test changes, served on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.gateway.discovery.dns_server import Zone, dns_server


@pytest.fixture
def zone() -> Zone:
    """The records the DNS server answers from; change them while it runs."""
    return Zone()


@pytest.fixture
def nameserver(zone: Zone) -> Iterator[str]:
    """`zone` served on 127.0.0.1, as a `discover` block names its nameserver."""
    with dns_server(zone) as address:
        yield address

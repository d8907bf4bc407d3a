"""The DNS lookups of a `discover` block, through dnspython's asyncio resolver: A and AAAA
records as addresses, SRV records as targets with ports, each target's addresses taken from
the answer's additional section when the server put them there, else looked up.

Imported only when a config has a `discover` block: a gateway without one never loads
`dns`. An answer that the name has no such records (NXDOMAIN, no answer) is an answer: no
addresses. Anything else (a timeout, SERVFAIL, no nameserver answering) is `LookupFailed`,
and the caller keeps what it had.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import dns.asyncresolver
import dns.exception
import dns.name
import dns.nameserver
import dns.rdatatype
import dns.resolver
import dns.rrset

from gateway.discovery.config import DiscoverConfig, nameserver_address
from gateway.discovery.expand import Address
from gateway.discovery.refresh import LookupFailed

MAX_RECORDS = 1024
"""At most this many SRV targets are looked up from one answer (`max_backends` is at most
1024 too): a huge answer costs a bounded number of lookups."""
MAX_ERROR_CHARS = 200


class DnsLookup:
    """Resolves `discover` blocks; one resolver per set of nameservers, made once (the
    system's reads /etc/resolv.conf, off the event loop)."""

    def __init__(self) -> None:
        self._resolvers: dict[tuple[str, ...], dns.asyncresolver.Resolver] = {}

    async def __call__(self, discover: DiscoverConfig) -> tuple[Address, ...]:
        """Every address `discover.dns` has now, each once; LookupFailed when no answer
        came within `timeout_s`, or a failure came instead."""
        try:  # the system's resolver may fail to configure (no nameserver in resolv.conf)
            resolver = await self._resolver(tuple(discover.nameservers))
            async with asyncio.timeout(discover.timeout_s):
                if discover.record == "SRV":
                    found = await _srv(resolver, discover.dns, discover.timeout_s)
                else:
                    found = await _addresses(
                        resolver, discover.dns, discover.record, discover.timeout_s
                    )
        except TimeoutError:
            raise LookupFailed(f"no answer within {discover.timeout_s:g} s") from None
        except (dns.exception.DNSException, OSError) as exc:  # OSError: no route to it
            raise LookupFailed(f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]) from None
        return tuple(dict.fromkeys(found))

    async def _resolver(self, nameservers: tuple[str, ...]) -> dns.asyncresolver.Resolver:
        resolver = self._resolvers.get(nameservers)
        if resolver is None:
            resolver = await asyncio.to_thread(_make_resolver, nameservers)
            self._resolvers[nameservers] = resolver
        return resolver


def _make_resolver(nameservers: tuple[str, ...]) -> dns.asyncresolver.Resolver:
    if not nameservers:
        return dns.asyncresolver.Resolver()  # /etc/resolv.conf's
    resolver = dns.asyncresolver.Resolver(configure=False)
    resolver.nameservers = [
        dns.nameserver.Do53Nameserver(host, port)
        for host, port in map(nameserver_address, nameservers)
    ]
    return resolver


async def _addresses(
    resolver: dns.asyncresolver.Resolver, name: str, record: str, lifetime: float
) -> list[Address]:
    """`name`'s A and/or AAAA addresses, without ports."""
    types = ("A", "AAAA") if record == "A+AAAA" else (record,)
    answers = await asyncio.gather(*(_records(resolver, name, t, lifetime) for t in types))
    return [Address(rdata.address) for answer in answers if answer for rdata in answer]


async def _records(
    resolver: dns.asyncresolver.Resolver, name: str, rdtype: str, lifetime: float
) -> dns.resolver.Answer | None:
    """The answer; None when the name, or such records of it, do not exist."""
    try:
        return await resolver.resolve(name, rdtype, lifetime=lifetime)
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        return None


async def _srv(resolver: dns.asyncresolver.Resolver, name: str, lifetime: float) -> list[Address]:
    """Each SRV target's addresses with the record's port."""
    answer = await _records(resolver, name, "SRV", lifetime)
    if answer is None:
        return []
    records = [
        (rdata.target.to_text().rstrip("."), rdata.port)
        for rdata in answer
        if rdata.port != 0 and rdata.target != dns.name.root  # RFC 2782: "." is no service
    ][:MAX_RECORDS]
    glue = _additional(answer.response.additional)
    targets = list({target.lower() for target, _ in records} - glue.keys())
    looked_up = await asyncio.gather(
        *(_addresses(resolver, target, "A+AAAA", lifetime) for target in targets)
    )
    hosts = glue | {t: [a.host for a in found] for t, found in zip(targets, looked_up, strict=True)}
    return [Address(host, port) for target, port in records for host in hosts[target.lower()]]


def _additional(rrsets: Iterable[dns.rrset.RRset]) -> dict[str, list[str]]:
    """The addresses the server sent along with an SRV answer, by target name."""
    found: dict[str, list[str]] = {}
    for rrset in rrsets:
        if rrset.rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA):
            name = rrset.name.to_text().rstrip(".").lower()
            found.setdefault(name, []).extend(rdata.address for rdata in rrset)
    return found

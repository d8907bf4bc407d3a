"""A real DNS server on loopback for the discovery tests: dnslib's UDP server on a free
port of 127.0.0.1, answering from records the test changes while it runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dnslib import AAAA, QTYPE, RCODE, RR, SRV, A, DNSRecord
from dnslib.server import BaseResolver, DNSHandler, DNSLogger, DNSServer


class Zone(BaseResolver):
    """Records by name: A and AAAA addresses, SRV (target, port) pairs; a name it does not
    hold is NXDOMAIN. `failing` answers SERVFAIL to everything; `glue` puts SRV targets'
    addresses in the additional section, as Kubernetes' DNS does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._a: dict[str, list[str]] = {}
        self._aaaa: dict[str, list[str]] = {}
        self._srv: dict[str, list[tuple[str, int]]] = {}
        self.failing = False
        self.glue = False
        self.queries = 0

    def set_a(self, name: str, *hosts: str) -> None:
        with self._lock:
            self._a[_key(name)] = list(hosts)

    def set_aaaa(self, name: str, *hosts: str) -> None:
        with self._lock:
            self._aaaa[_key(name)] = list(hosts)

    def set_srv(self, name: str, *targets: tuple[str, int]) -> None:
        with self._lock:
            self._srv[_key(name)] = list(targets)

    def drop(self, name: str) -> None:
        with self._lock:
            for table in (self._a, self._aaaa, self._srv):
                table.pop(_key(name), None)

    def resolve(self, request: DNSRecord, handler: DNSHandler) -> DNSRecord:
        reply = request.reply()
        qname = request.q.qname
        name, qtype = _key(str(qname)), QTYPE[request.q.qtype]
        with self._lock:
            self.queries += 1
            if self.failing:
                reply.header.rcode = RCODE.SERVFAIL
                return reply
            if not any(name in t for t in (self._a, self._aaaa, self._srv)):
                reply.header.rcode = RCODE.NXDOMAIN
                return reply
            for rr in self._records(name, qname, qtype):
                reply.add_answer(rr)
            if qtype == "SRV" and self.glue:
                for target, _ in self._srv.get(name, []):
                    for rr in self._records(_key(target), target, "A"):
                        reply.add_ar(rr)
        return reply

    def _records(self, name: str, qname: Any, qtype: str) -> list[RR]:
        if qtype == "A":
            return [RR(qname, QTYPE.A, rdata=A(h), ttl=0) for h in self._a.get(name, [])]
        if qtype == "AAAA":
            return [RR(qname, QTYPE.AAAA, rdata=AAAA(h), ttl=0) for h in self._aaaa.get(name, [])]
        if qtype == "SRV":
            return [
                RR(qname, QTYPE.SRV, rdata=SRV(0, 10, port, target), ttl=0)
                for target, port in self._srv.get(name, [])
            ]
        return []


def _key(name: str) -> str:
    return name.lower().rstrip(".")


@contextmanager
def dns_server(zone: Zone) -> Iterator[str]:
    """Serve `zone` on 127.0.0.1 (UDP, a free port) until the block ends; yields the
    nameserver as a `discover` block names it (`127.0.0.1:PORT`)."""
    quiet = DNSLogger(log="-request,-reply,-truncated,-error,-recv,-send,-data", logf=_quiet)
    server = DNSServer(zone, address="127.0.0.1", port=0, logger=quiet)
    server.start_thread()
    try:
        yield f"127.0.0.1:{server.server.server_address[1]}"
    finally:
        server.stop()
        server.server.server_close()


def _quiet(message: str) -> None:
    pass

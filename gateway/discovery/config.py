"""A backend entry's `discover` block: the DNS name whose addresses become its backends,
which records to ask for, how often, and at most how many backends it may become."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field

from gateway.config.strict import StrictConfig

if TYPE_CHECKING:
    from gateway.config.backends import BackendConfig

_LABEL = r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
DNS_NAME_PATTERN = rf"^({_LABEL}\.)*{_LABEL}\.?$"
"""A DNS name: labels of letters, digits, `-` and `_` (SRV's `_http._tcp.`), at most 253
characters in all."""
DISCOVERING_KINDS = frozenset({"openai-compatible", "vllm", "sglang", "llama-cpp", "ollama"})
"""Engines the operator runs, reached over plain OpenAI-compatible HTTP at each address."""
ENGINE_PRESETS = frozenset({"vllm", "sglang", "llama-cpp", "ollama"})
MAX_NAMESERVERS = 4


def nameserver_address(text: str) -> tuple[str, int]:
    """`10.0.0.10`, `10.0.0.10:5353`, `::1` or `[::1]:5353` as an IP address and a port
    (53 unless given); ValueError for anything else."""
    host, port = text, 53
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"{text!r}: expected [IPv6]:port")
        port = int(rest[1:]) if rest else 53
    elif text.count(":") == 1:
        host, _, number = text.partition(":")
        port = int(number)
    ipaddress.ip_address(host)  # raises ValueError: a nameserver is an address, not a name
    if not 1 <= port <= 65535:
        raise ValueError(f"{text!r}: port out of range")
    return host, port


def _check_nameserver(text: str) -> str:
    try:
        nameserver_address(text)
    except ValueError:
        raise ValueError(
            f"not an IP address with an optional port (10.0.0.10:53, [::1]:53): {text!r}"
        ) from None
    return text


Nameserver = Annotated[str, AfterValidator(_check_nameserver)]
RecordType = Literal["A", "AAAA", "A+AAAA", "SRV"]


class DiscoverConfig(StrictConfig):
    """Where a backend entry's addresses come from. Each address the name has becomes a
    backend of its own, named `<entry>@<address>:<port>`, with the entry's settings; a
    route naming the entry means every such backend."""

    dns: str = Field(
        pattern=DNS_NAME_PATTERN,
        max_length=254,
        description="The fully qualified name to resolve: a headless Service's "
        "(vllm.ns.svc.cluster.local), or an SRV name (_http._tcp.vllm.ns.svc.cluster.local).",
    )
    record: RecordType = Field(
        "A+AAAA",
        description="A, AAAA or both: addresses, the port from `port` or base_url; SRV: "
        "targets and their ports, each target's A and AAAA addresses.",
    )
    port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="A/AAAA: the port of every address (unset: base_url's, else the kind's "
        "usual one); refused with SRV, whose records give it.",
    )
    interval_s: float = Field(10.0, ge=0.1, le=3600, description="Time between two lookups.")
    timeout_s: float = Field(
        2.0, gt=0, le=60, description="One lookup whole (an SRV target's addresses included)."
    )
    max_backends: int = Field(
        64,
        ge=1,
        le=1024,
        description="At most this many backends; more addresses: those already in use are "
        "kept, then the lowest, and a warning is logged.",
    )
    remove_after: int = Field(
        1,
        ge=1,
        le=100,
        description="An address in use goes once this many answers in a row lack it: 1 (the "
        "default) follows a removal at the next lookup; more rides out DNS servers that "
        "answer with a rotating subset of the addresses (Route 53 multivalue, Consul).",
    )
    nameservers: list[Nameserver] = Field(
        default_factory=list,
        max_length=MAX_NAMESERVERS,
        description="Ask these (`10.0.0.10`, `127.0.0.1:5353`) instead of /etc/resolv.conf's.",
    )

    @property
    def query(self) -> tuple[str, str, tuple[str, ...]]:
        """What a lookup asks, and whom: answers found for another query do not count."""
        return self.dns.lower().rstrip("."), self.record, tuple(self.nameservers)


def discover_problem(backend: BackendConfig) -> str | None:
    """Why `backend`'s `discover` block does not fit the rest of the entry, if it does not
    (a message starting with the key at fault, below the entry)."""
    discover = backend.discover
    if discover is None:
        return None
    if backend.kind not in DISCOVERING_KINDS or (
        backend.preset is not None and backend.preset not in ENGINE_PRESETS
    ):
        return (
            "discover: only for engines the operator runs (kinds openai-compatible, vllm, "
            f"sglang, llama-cpp, ollama, and their presets), not {backend.preset or backend.kind}"
        )
    if backend.health_url is not None:
        return "health_url: would name one host for every discovered address; leave it out"
    if backend.metrics is not None and backend.metrics.url is not None:
        return "metrics.url: would name one host for every discovered address; use metrics.path"
    has_port = backend.base_url is not None and urlsplit(backend.base_url).port is not None
    if discover.record == "SRV":
        if discover.port is not None or has_port:
            where = "discover.port" if discover.port is not None else "base_url"
            return f"{where}: SRV records give each address's port; leave it out"
    elif discover.port is not None and has_port:
        return "discover.port: base_url names a port already; set one of them"
    elif discover.port is None and not has_port and backend.preset_name is None:
        return f"discover.port: required for {discover.record} records unless base_url names one"
    return None

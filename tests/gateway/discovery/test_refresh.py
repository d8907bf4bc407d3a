"""The process's discovery state against a real DNS server on loopback: each entry looked
up when due, answers kept per query, failures keeping the last answer, entries a reload
removed forgotten."""

from __future__ import annotations

from typing import Any

from gateway.config.root import Config, parse_config
from gateway.discovery.refresh import Discovery
from gateway.discovery.resolver import DnsLookup
from tests.gateway.discovery.dns_server import Zone


def written(nameserver: str, dns: str = "vllm.test", **discover: Any) -> Config:
    block = {"dns": dns, "nameservers": [nameserver], "interval_s": 60, **discover}
    return parse_config(
        {
            "backends": [{"name": "vllm", "kind": "vllm", "models": ["m"], "discover": block}],
            "routes": [{"name": "m", "backends": ["vllm"]}],
        }
    )


def names(config: Config) -> list[str]:
    return [backend.name for backend in config.backends]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_an_entry_is_looked_up_when_due_and_kept_between(zone: Zone, nameserver: str) -> None:
    zone.set_a("vllm.test", "10.0.0.1")
    clock = Clock()
    discovery = Discovery(DnsLookup(), clock=clock)
    source = written(nameserver)
    assert await discovery.refresh(source) is True
    assert names(discovery.expand(source)) == ["vllm@10.0.0.1:8000"]
    zone.set_a("vllm.test", "10.0.0.1", "10.0.0.2")
    assert await discovery.refresh(source) is False, "not due before interval_s"
    assert zone.queries == 2  # A and AAAA, once
    clock.now += 60
    assert await discovery.refresh(source) is True
    assert names(discovery.expand(source)) == ["vllm@10.0.0.1:8000", "vllm@10.0.0.2:8000"]
    clock.now += 60
    assert await discovery.refresh(source) is False, "the same answer changes nothing"


async def test_a_failed_lookup_keeps_the_last_answer_and_says_why(
    zone: Zone, nameserver: str
) -> None:
    zone.set_a("vllm.test", "10.0.0.1")
    clock = Clock()
    discovery = Discovery(DnsLookup(), clock=clock)
    source = written(nameserver)
    await discovery.refresh(source)
    zone.failing = True
    clock.now += 60
    assert await discovery.refresh(source) is False
    assert names(discovery.expand(source)) == ["vllm@10.0.0.1:8000"]
    (row,) = discovery.status(source)
    assert row["last_error"].startswith("NoNameservers")
    assert row["backends"] == ["vllm@10.0.0.1:8000"]
    zone.failing = False
    clock.now += 60
    await discovery.refresh(source)
    assert discovery.status(source)[0]["last_error"] is None


async def test_answers_belong_to_their_query(zone: Zone, nameserver: str) -> None:
    """A reload that points the entry at another name does not serve the old name's
    addresses; one that removes the entry forgets it."""
    zone.set_a("vllm.test", "10.0.0.1")
    zone.set_a("other.test", "10.0.0.9")
    discovery = Discovery(DnsLookup(), clock=Clock())
    await discovery.refresh(written(nameserver))
    moved = written(nameserver, dns="other.test")
    assert names(discovery.expand(moved)) == []
    assert await discovery.refresh(moved) is True, "a new query is due at once"
    assert names(discovery.expand(moved)) == ["vllm@10.0.0.9:8000"]
    plain = parse_config(
        {
            "backends": [{"name": "s", "base_url": "http://127.0.0.1:9/v1", "models": ["m"]}],
            "routes": [{"name": "m", "backends": ["s"]}],
        }
    )
    await discovery.refresh(plain)
    assert discovery.status(moved)[0]["resolved_at"] is None, "forgotten"

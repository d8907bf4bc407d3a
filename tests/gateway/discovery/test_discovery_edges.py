"""DNS discovery's harder cases: a reload that adds or re-points an entry, SRV records
with no port, a failing apply, DNS servers answering with a rotating subset
(`remove_after`), the series a removed backend leaves, a preset's port, and answers
staged for a config not served yet."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gateway.config.root import Config, parse_config
from gateway.discovery.config import DiscoverConfig
from gateway.discovery.expand import Address
from gateway.discovery.refresh import Discovery
from gateway.discovery.resolver import DnsLookup
from tests.conftest import StartEmulator, eventually
from tests.gateway.discovery.dns_server import Zone, dns_server
from tests.gateway.discovery.test_discovery_http import SRV_NAME, config, name_of, publish
from tests.integration.lifecycle import ADMIN, ADMIN_ENV, chat, file_gateway, fleet_config


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# A file reload that changes an entry's query (dns, record or nameservers), or adds a
# discovering entry, looks it up before its config serves: no window without backends,
# and unchanged addresses keep their state.


async def test_a_reload_that_adds_a_nameserver_keeps_the_entry_s_backends(
    tmp_path: Path,
    zone: Zone,
    nameserver: str,
    start_emulator: StartEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ADMIN_ENV, "admin-key-1")
    engine = await start_emulator()
    publish(zone, engine)
    entry = config(nameserver, {"dns": SRV_NAME, "record": "SRV", "interval_s": 60})
    written = fleet_config([entry["backends"][0]], {"default": ["engines"]})
    with dns_server(zone) as second:  # the same zone, a second server
        async with file_gateway(tmp_path / "c.yaml", written) as gw:
            assert (await gw.client.post("/v1/chat/completions", json=chat())).status_code == 200
            state = gw.gateway.state.estimates(name_of(engine))
            moved = dict(entry["backends"][0])
            moved["discover"] = {**moved["discover"], "nameservers": [nameserver, second]}
            gw.write(fleet_config([moved], {"default": ["engines"]}))
            answer = await gw.client.post("/v1/switchyard/admin/reload", headers=ADMIN)
            assert answer.status_code == 200, answer.text
            after = await gw.client.post("/v1/chat/completions", json=chat())

            assert answer.json()["backends"]["unchanged"] == [name_of(engine)], answer.text
            assert after.status_code == 200, after.text
            assert gw.gateway.state.estimates(name_of(engine)) is state


async def test_a_reload_adding_a_discovering_entry_serves_its_addresses_at_once(
    tmp_path: Path,
    zone: Zone,
    nameserver: str,
    start_emulator: StartEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ADMIN_ENV, "admin-key-1")
    engine, other = await start_emulator(), await start_emulator()
    publish(zone, engine)
    zone.set_a("other.engines.test", "127.0.0.1")
    first = config(nameserver, {"dns": SRV_NAME, "record": "SRV", "interval_s": 60})
    entry = first["backends"][0]
    async with file_gateway(
        tmp_path / "c.yaml", fleet_config([entry], {"default": ["engines"]})
    ) as gw:
        added = {
            **entry,
            "name": "more",
            "discover": {
                "dns": "other.engines.test",
                "record": "A",
                "port": other.port,
                "nameservers": [nameserver],
                "interval_s": 60,
            },
        }
        # The route moves from one entry to another (a migration, not a new route).
        gw.write(fleet_config([entry, added], {"default": ["more"]}))
        answer = await gw.client.post("/v1/switchyard/admin/reload", headers=ADMIN)
        assert answer.status_code == 200, answer.text
        after = await gw.client.post("/v1/chat/completions", json=chat())

        assert after.status_code == 200, after.text


# An SRV record with port 0, or the target ".", is no service (RFC 2782): not a backend,
# with or without a preset's port to fall back on; and the loop outlives a failing apply.


def srv_entry(nameserver: str, kind: str = "openai-compatible", interval_s: float = 60) -> Config:
    block = {
        "dns": SRV_NAME,
        "record": "SRV",
        "nameservers": [nameserver],
        "interval_s": interval_s,
    }
    return parse_config(
        {
            "backends": [{"name": "e", "kind": kind, "models": ["m"], "discover": block}],
            "routes": [{"name": "m", "backends": ["e"]}],
        }
    )


async def test_an_srv_record_with_port_zero_is_not_a_backend(zone: Zone, nameserver: str) -> None:
    zone.set_srv(SRV_NAME, ("good.engines.test", 8001), ("zero.engines.test", 0))
    zone.set_a("good.engines.test", "127.0.0.1")
    zone.set_a("zero.engines.test", "127.0.0.2")
    discovery = Discovery(DnsLookup(), clock=Clock())
    source = srv_entry(nameserver)
    await discovery.refresh(source)

    expanded = discovery.expand(source)
    assert [b.name for b in expanded.backends] == ["e@127.0.0.1:8001"]
    assert discovery.status(source)[0]["backends"] == ["e@127.0.0.1:8001"]


async def test_an_srv_record_with_port_zero_does_not_take_the_preset_s_port(
    zone: Zone, nameserver: str
) -> None:
    zone.set_srv(SRV_NAME, ("zero.engines.test", 0))
    zone.set_a("zero.engines.test", "127.0.0.2")
    discovery = Discovery(DnsLookup(), clock=Clock())
    source = srv_entry(nameserver, kind="vllm")
    await discovery.refresh(source)

    assert [b.name for b in discovery.expand(source).backends] == []


async def test_the_loop_outlives_a_failure_to_apply(zone: Zone, nameserver: str) -> None:
    """Any exception out of the runtime's apply must not end the loop for good."""

    class Follower:
        def __init__(self, source: Config) -> None:
            self.source = source
            self.calls = 0

        async def follow_discovery(self) -> None:
            self.calls += 1
            if self.calls == 1:
                raise ValueError("a bug in the apply")

    zone.set_srv(SRV_NAME, ("a.engines.test", 8001))
    zone.set_a("a.engines.test", "127.0.0.1")
    source = srv_entry(nameserver, interval_s=0.1)
    discovery = Discovery(DnsLookup())
    follower = Follower(source)
    task = asyncio.create_task(discovery.run(follower))
    try:
        await eventually(lambda: _true(follower.calls >= 1), "the first apply", 5)
        zone.set_a("a.engines.test", "127.0.0.1", "127.0.0.3")

        await eventually(lambda: _true(follower.calls >= 2), "a later apply", 5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _true(value: bool) -> bool:
    return value


# DNS answering a rotating subset (3 of 5 addresses per query, as Route 53 multivalue or
# Consul do) would make every lookup a change; `remove_after` rides it out.


async def test_a_rotating_subset_of_answers_does_not_churn_every_interval() -> None:
    pool = [Address(f"10.0.0.{i}") for i in range(1, 6)]
    turn = 0

    async def rotating(discover: DiscoverConfig) -> tuple[Address, ...]:
        nonlocal turn
        turn += 1
        return tuple(pool[(turn + k) % 5] for k in range(3))

    clock = Clock()
    discovery = Discovery(rotating, clock=clock)
    block = {"dns": "vllm.test", "interval_s": 10, "remove_after": 3}
    source = parse_config(
        {
            "backends": [{"name": "vllm", "kind": "vllm", "models": ["m"], "discover": block}],
            "routes": [{"name": "m", "backends": ["vllm"]}],
        }
    )
    changes = 0
    for _ in range(10):
        changes += await discovery.refresh(source)
        clock.now += 10
    # With the default (1), 10 of 10 lookups are changes (a new generation each interval):
    # with remove_after 3, an address leaves only after 3 answers in a row lack it, which
    # never happens here once all five have been seen.
    assert changes <= 3, f"{changes} generations in 10 intervals"


async def test_remove_after_still_follows_a_real_removal() -> None:
    answers = [(Address("10.0.0.1"), Address("10.0.0.2"))] + [(Address("10.0.0.1"),)] * 3
    seen = iter(answers)

    async def lookup(discover: DiscoverConfig) -> tuple[Address, ...]:
        return next(seen)

    clock = Clock()
    discovery = Discovery(lookup, clock=clock)
    block = {"dns": "vllm.test", "interval_s": 10, "remove_after": 2}
    source = parse_config(
        {
            "backends": [{"name": "vllm", "kind": "vllm", "models": ["m"], "discover": block}],
            "routes": [{"name": "m", "backends": ["vllm"]}],
        }
    )
    entry = source.backends[0]
    used = []
    for _ in answers:
        await discovery.refresh(source)
        used.append(len(discovery._addresses(entry)))
        clock.now += 10
    assert used == [2, 2, 1, 1], "kept through one missing answer, gone after the second"


# A removed discovered backend leaves no series: its counters, histograms and dashboard
# panels go with it (pod IPs come and go without bound).


async def test_a_removed_backend_leaves_no_series_behind(
    tmp_path: Path,
    zone: Zone,
    nameserver: str,
    start_emulator: StartEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ADMIN_ENV, "admin-key-1")
    first, second = await start_emulator(), await start_emulator()
    publish(zone, first)
    entry = config(nameserver, {"dns": SRV_NAME, "record": "SRV"})["backends"][0]
    written = fleet_config([entry], {"default": ["engines"]})
    async with file_gateway(tmp_path / "c.yaml", written) as gw:
        assert (await gw.client.post("/v1/chat/completions", json=chat())).status_code == 200
        publish(zone, second)
        gone = name_of(first)

        async def dropped() -> bool:
            names = [b.name for b in gw.gateway.config.backends]
            return gone not in names and gw.runtime.retiring == 0

        await eventually(dropped, "the first engine dropped", 20)
        assert (await gw.client.post("/v1/chat/completions", json=chat())).status_code == 200
        # Records reach the metrics up to 0.5 s late (the telemetry thread's batches), so
        # those of requests that finished on a removed backend around an apply may land
        # after it: the next apply sweeps them (at most the last apply's removals stay).
        await asyncio.sleep(1.0)
        third = await start_emulator()
        publish(zone, second, third)

        async def applied() -> bool:
            return name_of(third) in [b.name for b in gw.gateway.config.backends]

        await eventually(applied, "another apply", 20)
        text = (await gw.client.get("/metrics")).text
        leftover = [line for line in text.splitlines() if gone in line]
        series = gw.gateway.telemetry.series
        panels = list(series._backends) if series is not None else []

        # does the dashboard's panel dict.
        assert leftover == [], leftover[:5]
        assert gone not in panels


# A preset kind (vllm) whose base_url names no port takes the kind's usual port.


def test_a_preset_kind_s_base_url_without_a_port_takes_the_kind_s_port() -> None:
    from gateway.discovery.expand import expand, summary

    source = parse_config(
        {
            "backends": [
                {
                    "name": "v",
                    "kind": "vllm",
                    "base_url": "http://vllm-svc/v1",
                    "models": ["m"],
                    "discover": {"dns": "vllm.test"},
                }
            ],
            "routes": [{"name": "m", "backends": ["v"]}],
        }
    )
    assert "v@<address>:8000" in summary(source.backends[0])
    (made,) = expand(source, {"v": [Address("10.0.0.1")]}).backends
    assert made.base_url == "http://10.0.0.1:8000/v1"


# A reload's lookups are staged apart from the loop's entries: the loop, still following
# the served config, must not clobber them.


async def test_staged_answers_survive_the_loop_following_the_old_config(
    zone: Zone, nameserver: str
) -> None:
    zone.set_a("vllm.test", "10.0.0.1")
    zone.set_a("other.test", "10.0.0.9")

    def written(dns: str) -> Config:
        block = {"dns": dns, "nameservers": [nameserver], "interval_s": 60}
        return parse_config(
            {
                "backends": [{"name": "v", "kind": "vllm", "models": ["m"], "discover": block}],
                "routes": [{"name": "m", "backends": ["v"]}],
            }
        )

    clock = Clock()
    discovery = Discovery(DnsLookup(), clock=clock)
    old, new = written("vllm.test"), written("other.test")
    await discovery.refresh(old)
    await discovery.prepare(new)
    clock.now += 30
    await discovery.refresh(old)  # the loop, before the swap (its _entry for `old`)
    assert [b.name for b in discovery.expand(new).backends] == ["v@10.0.0.9:8000"]
    assert [b.name for b in discovery.expand(old).backends] == ["v@10.0.0.1:8000"]
    queries = zone.queries
    assert await discovery.refresh(new) is False, "adopted, not due again"
    assert zone.queries == queries

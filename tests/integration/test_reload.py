"""Config reload on a running gateway (`POST /v1/switchyard/admin/reload`): atomic, state of
unchanged backends kept, requests in flight finished on the config they started on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import StartEmulator, eventually
from tests.gateway.telemetry.test_metrics_endpoint import samples
from tests.integration.lifecycle import (
    ADMIN,
    ADMIN_ENV,
    FileGateway,
    backend,
    chat,
    file_gateway,
    fleet_config,
    open_stream,
)

RELOAD = "/v1/switchyard/admin/reload"
CHAT = "/v1/chat/completions"
KEYS = "/v1/switchyard/admin/keys"


@pytest.fixture(autouse=True)
def admin_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ADMIN_ENV, "admin-key-1")


async def test_an_invalid_file_keeps_the_running_config(
    tmp_path: Path, start_emulator: StartEmulator
) -> None:
    engine = await start_emulator()
    config = fleet_config([backend("b1", engine.base_url)], {"default": ["b1"]})
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        running = gw.gateway
        broken = fleet_config([backend("b1", engine.base_url)], {"default": ["b1", "nope"]})
        broken["timeouts"] = {"connect_s": -1}
        gw.write(broken)
        answer = await gw.client.post(RELOAD, headers=ADMIN)
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_config")
        problems = error["problems"]
        assert any(p.startswith("timeouts.connect_s") for p in problems)
        assert any("nope" in p for p in problems)
        gw.write("backends: [unclosed")
        answer = await gw.client.post(RELOAD, headers=ADMIN)
        assert answer.status_code == 400
        assert answer.json()["error"]["problems"][0].startswith("(yaml)")
        assert gw.gateway is running and gw.runtime.generation == 1
        served = await gw.client.post(CHAT, json=chat())
        assert served.status_code == 200


async def test_the_reload_route_needs_an_admin_key(
    tmp_path: Path, start_emulator: StartEmulator
) -> None:
    engine = await start_emulator()
    config = fleet_config([backend("b1", engine.base_url)], {"default": ["b1"]})
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        answer = await gw.client.post(RELOAD)
        assert answer.status_code == 401
        assert gw.runtime.generation == 1


async def test_a_valid_file_is_swapped_in_and_summarised(
    tmp_path: Path, start_emulator: StartEmulator
) -> None:
    one, two = await start_emulator(), await start_emulator()
    config = fleet_config([backend("b1", one.base_url)], {"default": ["b1"]})
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        first = gw.gateway
        gw.write(
            fleet_config(
                [backend("b1", one.base_url), backend("b2", two.base_url)],
                {"default": ["b1"], "second": ["b2"]},
                server={"shutdown_drain_s": 5},
            )
        )
        answer = await gw.client.post(RELOAD, headers=ADMIN)
        assert answer.status_code == 200, answer.text
        summary = answer.json()
        assert summary["generation"] == 2
        assert summary["backends"] == {
            "added": ["b2"],
            "removed": [],
            "changed": [],
            "unchanged": ["b1"],
        }
        assert summary["routes"]["added"] == ["second"]
        assert summary["routes"]["unchanged"] == ["default"]
        current = gw.gateway
        assert current is not first and current.config.server.shutdown_drain_s == 5
        # The unchanged backend keeps its provider (its HTTP session): the same object.
        assert current.providers["b1"] is first.providers["b1"]
        served = await gw.client.post(CHAT, json=chat(route="second"))
        assert served.status_code == 200
        assert served.headers["x-switchyard-backend"] == "b2"
        # The gauges follow the new generation's fleet: the added backend shows up.
        assert current.telemetry.fleet is current.state

        async def gauged() -> bool:
            text = (await gw.client.get("/metrics")).text
            return 'switchyard_backend_healthy{backend="b2"}' in text

        await eventually(gauged, "the added backend's health gauge")


async def test_a_setting_only_a_restart_applies_is_refused(
    tmp_path: Path, start_emulator: StartEmulator
) -> None:
    engine = await start_emulator()
    config = fleet_config([backend("b1", engine.base_url)], {"default": ["b1"]})
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        changed = fleet_config(
            [backend("b1", engine.base_url), backend("b2", engine.base_url)],
            {"default": ["b1"]},
            server={"port": 9999},
        )
        gw.write(changed)
        answer = await gw.client.post(RELOAD, headers=ADMIN)
        assert answer.status_code == 409
        error = answer.json()["error"]
        assert error["code"] == "restart_required"
        assert error["message"].startswith("server.port:")
        assert gw.runtime.generation == 1 and "b2" not in gw.gateway.providers


async def test_a_stream_in_flight_finishes_on_the_backend_it_started_on(
    tmp_path: Path, start_emulator: StartEmulator
) -> None:
    # The old backend pauses its stream long enough for the reload to land mid-stream.
    old = await start_emulator(
        token_delay_ms=1.0, faults={"stall_mid_stream_after_chunks": 2, "stall_mid_stream_s": 1.5}
    )
    new = await start_emulator()
    config = fleet_config([backend("old", old.base_url)], {"default": ["old"]})
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        first = gw.gateway
        async with open_stream(gw.client, CHAT, chat(stream=True, max_tokens=12)) as stream:
            assert stream.response.headers["x-switchyard-backend"] == "old"
            await stream.read_until("data: ")
            gw.write(fleet_config([backend("new", new.base_url)], {"default": ["new"]}))
            answer = await gw.client.post(RELOAD, headers=ADMIN)
            assert answer.json()["backends"]["removed"] == ["old"]
            # The stream is still on the first generation, which waits for it.
            assert (gw.runtime.in_flight(), gw.runtime.retiring) == (1, 1)
            after = await gw.client.post(CHAT, json=chat())
            assert after.headers["x-switchyard-backend"] == "new"
            text = await stream.read_to_end()
        assert text.rstrip().endswith("data: [DONE]")
        assert '"error"' not in text
        # The removed backend's counters were kept to the end, then it was let go.
        assert [b["in_flight"] for b in first.state.describe()] == [0]
        runtime = gw.runtime

        async def retired() -> bool:
            return runtime.retiring == 0

        # Its last request has ended: the old generation is let go, its provider closed.
        await eventually(retired, "the first generation retired")


async def test_unchanged_backends_keep_their_state(
    tmp_path: Path, start_emulator: StartEmulator
) -> None:
    one, two, three = await start_emulator(), await start_emulator(), await start_emulator()
    backends = [backend("b1", one.base_url), backend("b2", two.base_url)]
    config = fleet_config(backends, {"default": ["b1"], "other": ["b2"]})
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        served = await gw.client.post(CHAT, json=chat())
        assert served.headers["x-switchyard-backend"] == "b1"
        first = gw.gateway
        held = first.router.index.blocks_held("b1")
        assert held > 0
        for _ in range(first.config.health.consecutive_failures):
            first.state.record_failure("b2", "test: upstream 503")
        gw.write(
            fleet_config(
                [*backends, backend("b3", three.base_url)],
                {"default": ["b1"], "other": ["b2", "b3"]},
            )
        )
        answer = await gw.client.post(RELOAD, headers=ADMIN)
        assert answer.json()["backends"]["unchanged"] == ["b1", "b2"]
        current = gw.gateway
        assert current.state is not first.state
        assert current.router.index.blocks_held("b1") == held  # the prefix index entries
        described = {b["name"]: b for b in current.state.describe()}
        assert described["b1"]["requests"] == 1  # the load counters
        assert not described["b2"]["healthy"]  # the ejection
        assert str(described["b2"]["health_reason"]).startswith("ejected")
        assert described["b3"]["healthy"]
        again = await gw.client.post(CHAT, json=chat(route="other"))
        assert again.headers["x-switchyard-backend"] == "b3"  # b2 is still out


async def test_requests_held_by_flow_control_are_served_across_a_reload(
    tmp_path: Path, start_emulator: StartEmulator
) -> None:
    engine = await start_emulator(token_delay_ms=40.0)
    one = {**backend("b1", engine.base_url), "max_concurrency": 1}
    config = fleet_config([one], {"default": ["b1"]}, flow_control={"enabled": True})
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        first = gw.gateway
        sent = [
            asyncio.create_task(gw.client.post(CHAT, json=chat(max_tokens=8))) for _ in range(3)
        ]

        async def held() -> bool:
            admission = first.admission
            return admission is not None and bool(admission.queue_depths())

        await eventually(held, "requests held by the first generation")
        gw.write(fleet_config([one], {"default": ["b1"]}, flow_control={"enabled": True}))
        assert (await gw.client.post(RELOAD, headers=ADMIN)).status_code == 200
        assert gw.gateway is not first
        answers = await asyncio.gather(*sent)
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert {a.headers["x-switchyard-admission"] for a in answers} <= {"immediate", "queued"}
        # A request after the reload goes through the new generation's queue.
        after = await gw.client.post(CHAT, json=chat())
        assert after.status_code == 200 and after.headers["x-switchyard-admission"] == "immediate"


GAUGES = {
    "switchyard_backend_healthy",
    "switchyard_in_flight_requests",
    "switchyard_quality_score",
    "switchyard_quality_ejected",
}


async def test_a_removed_backends_gauges_leave_metrics_and_its_counters_stay(
    tmp_path: Path, start_emulator: StartEmulator
) -> None:
    one, two = await start_emulator(), await start_emulator()
    backends = [backend("b1", one.base_url), backend("b2", two.base_url)]
    quality = {"enabled": True, "probes": {"enabled": False}}
    config = fleet_config(backends, {"default": ["b1"], "two": ["b2"]}, quality=quality)
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        for route in ("default", "two"):
            assert (await gw.client.post(CHAT, json=chat(route=route))).status_code == 200

        async def gauged() -> bool:
            return await _families(gw, "b2") >= {*GAUGES, "switchyard_requests_total"}

        await eventually(gauged, "b2's gauges and its request counted")
        gw.write(fleet_config(backends[:1], {"default": ["b1"]}, quality=quality))
        answer = await gw.client.post(RELOAD, headers=ADMIN)
        assert answer.json()["backends"]["removed"] == ["b2"]
        left = await _families(gw, "b2")
        assert not GAUGES & left
        assert "switchyard_requests_total" in left  # counters keep their totals
        assert await _families(gw, "b1") >= GAUGES


async def _families(gw: FileGateway, backend: str) -> set[str]:
    """The names of the series /metrics labels with `backend`."""
    text = (await gw.client.get("/metrics")).text
    return {name for name, labels in samples(text) if ("backend", backend) in labels}


async def test_keys_may_use_and_name_a_route_the_reload_added(
    tmp_path: Path, start_emulator: StartEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SY_RELOAD_KEY_SECRET", "s" * 40)
    engine = await start_emulator()
    keys = {
        "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'keys.db'}"},
        "keys": {"enabled": True, "secret_env": "SY_RELOAD_KEY_SECRET"},
    }
    config = fleet_config([backend("b1", engine.base_url)], {"default": ["b1"]}, **keys)
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        every = await gw.client.post(KEYS, json={"name": "every"}, headers=ADMIN)
        every_route = {"authorization": f"Bearer {every.json()['key']}"}
        early = await gw.client.post(KEYS, json={"name": "x", "routes": ["second"]}, headers=ADMIN)
        assert early.status_code == 400  # no such route yet
        routes = {"default": ["b1"], "second": ["b1"]}
        gw.write(fleet_config([backend("b1", engine.base_url)], routes, **keys))
        assert (await gw.client.post(RELOAD, headers=ADMIN)).status_code == 200
        served = await gw.client.post(CHAT, json=chat(route="second"), headers=every_route)
        assert served.status_code == 200, served.text
        made = await gw.client.post(KEYS, json={"name": "x", "routes": ["second"]}, headers=ADMIN)
        assert made.status_code == 201, made.text
        only_second = {"authorization": f"Bearer {made.json()['key']}"}
        served = await gw.client.post(CHAT, json=chat(route="second"), headers=only_second)
        assert served.status_code == 200, served.text
        refused = await gw.client.post(CHAT, json=chat(), headers=only_second)
        assert refused.status_code == 403

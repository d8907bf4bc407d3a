"""What a reload changes: sections compared by name, restart-only settings, kept cache groups."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.process.reload_plan import compare, kept_cache_groups
from tests.conftest import make_config, parsed

URLS = {"a": "http://127.0.0.1:1/v1", "b": "http://127.0.0.1:2/v1"}


def config(**changes: Any) -> dict[str, Any]:
    base = make_config(URLS)
    base.update(changes)
    return base


def test_backends_and_routes_by_what_happens_to_them() -> None:
    before = parsed(config())
    after_dict = make_config({**URLS, "c": "http://127.0.0.1:3/v1"})
    after_dict["backends"][1]["max_concurrency"] = 7
    after_dict["routes"].append({"name": "extra", "model": "emulated-model", "backends": ["c"]})
    changes = compare(before, parsed(after_dict))
    assert changes.backends.as_dict() == {
        "added": ["c"],
        "removed": [],
        "changed": ["b"],
        "unchanged": ["a"],
    }
    assert changes.routes.added == ("extra",)
    assert changes.routes.changed == ("default",)  # it has a new member
    assert changes.restart_only == ()
    assert changes.describe() == (
        "backends: 1 added, 1 changed, 1 unchanged; routes: 1 added, 1 changed"
    )


@pytest.mark.parametrize(
    ("change", "paths"),
    [
        ({"server": {"port": 9000}}, ("server.port",)),
        (
            {"server": {"host": "127.0.0.2", "decision_ring_size": 5}},
            ("server.host", "server.decision_ring_size"),
        ),
        ({"server": {"shutdown_drain_s": 3, "max_body_bytes": 4096}}, ()),
        ({"server": {"clients": {"header_timeout_s": 3}}}, ("server.clients",)),
        ({"state": {"namespace": "other"}}, ("state",)),
        ({"quality": {"enabled": False}}, ("quality",)),
        ({"telemetry": {"access_log": "off"}}, ("telemetry",)),
        ({"timeouts": {"total_s": 5}, "retry": {"max_attempts": 1}}, ()),
        ({"health": {"consecutive_failures": 9}}, ()),
        ({"budgets": {"flush_ms": 500}}, ("budgets",)),
    ],
    ids=[
        "port",
        "host-and-ring",
        "reloadable-server",
        "client-bounds",
        "state",
        "quality",
        "telemetry",
        "timeouts-retry",
        "health",
        "budgets",
    ],
)
def test_settings_only_a_restart_applies(change: dict[str, Any], paths: tuple[str, ...]) -> None:
    assert compare(parsed(config()), parsed(config(**change))).restart_only == paths


def test_a_shared_cache_group_is_kept_only_while_all_its_members_are_unchanged() -> None:
    shared = make_config(URLS)
    for entry in shared["backends"]:
        entry["cache"] = {"key": "pool"}
    before = parsed(shared)
    assert kept_cache_groups(before, before, ["a", "b"]) == ("pool",)
    assert kept_cache_groups(before, before, ["a"]) == ()
    own = parsed(make_config(URLS))
    assert kept_cache_groups(own, own, ["a"]) == ("a",)
    assert kept_cache_groups(before, own, ["a", "b"]) == ()  # the groups themselves changed

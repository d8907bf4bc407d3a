"""The gateway config written for the replicas: accepted by the gateway's own loader, or
not written at all."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gateway.config.root import load_config
from gateway.engines.config_writer import write_config
from gateway.engines.state import Replica
from gateway.errors import ConfigError


def replica(
    name: str, port: int, *, n_ctx: int = 2048, parallel: int = 1, host_cache: int = 0
) -> Replica:
    return Replica(
        name=name,
        port=port,
        pid=4242,
        n_ctx=n_ctx,
        parallel=parallel,
        host_cache_tokens=host_cache,
        log_path=Path("x.log"),
    )


def test_the_config_loads_with_the_gateways_loader(tmp_path: Path) -> None:
    path = tmp_path / "engines.yaml"
    replicas = [replica("llama-1", 40001), replica("llama-2", 40002, n_ctx=1024, parallel=2)]

    returned = write_config(path, replicas, "smol", port=18080)

    config = load_config(path)
    assert config == returned
    assert config.server.port == 18080
    assert [(b.name, b.kind, b.base_url) for b in config.backends] == [
        ("llama-1", "llama-cpp", "http://127.0.0.1:40001/v1"),
        ("llama-2", "llama-cpp", "http://127.0.0.1:40002/v1"),
    ]
    second = config.backend("llama-2")
    assert (second.context_window_tokens, second.max_concurrency) == (1024, 2)
    assert second.models == ["smol"]
    assert second.scrapes_metrics


def test_the_cache_declared_is_the_slots_then_the_host_memory_cache(tmp_path: Path) -> None:
    replicas = [replica("a", 1, host_cache=2912), replica("b", 2, n_ctx=1024, parallel=2)]

    config = write_config(tmp_path / "engines.yaml", replicas, "smol")

    assert config.backend("a").cache.capacity_tokens == 2048 + 2912
    assert config.backend("b").cache.capacity_tokens == 2 * 1024


def test_probes_run_a_needle_that_fits_the_window_and_no_tool_call(tmp_path: Path) -> None:
    config = write_config(tmp_path / "engines.yaml", [replica("a", 1, n_ctx=1024)], "smol")

    probes = config.backend("a").probes
    assert probes is not None
    assert probes.enabled and probes.canary and probes.needle
    assert not probes.tool_call
    assert 512 < probes.needle_tokens < 1024
    assert probes.interval_s > 300  # a CPU slot is not taken every 5 minutes


def test_three_routes_over_every_replica(tmp_path: Path) -> None:
    path = tmp_path / "engines.yaml"
    config = write_config(path, [replica("a", 1), replica("b", 2)], "smol")

    routes = {r.name: (r.profile, r.backend_names, r.model) for r in config.routes}
    assert routes == {
        "default": ("cache-aware", ("a", "b"), "smol"),
        "least-load": ("least-load", ("a", "b"), "smol"),
        "round-robin": ("rotate", ("a", "b"), "smol"),
    }
    # The default profile is the embedded example's cache-aware one.
    embedded = yaml.safe_load(
        (Path(__file__).parents[3] / "gateway" / "examples" / "embedded.yaml").read_text()
    )
    written = yaml.safe_load(path.read_text())
    assert _profile(written, "cache-aware") == _profile(embedded, "cache-aware")
    assert _policy(written, "kv-cost") == _policy(embedded, "kv-cost")
    assert "&" not in path.read_text(), "plain YAML, no anchors for a reader to resolve"


def _profile(data: dict[str, object], name: str) -> object:
    profiles = data["profiles"]
    assert isinstance(profiles, list)
    return next(p for p in profiles if p["name"] == name)


def _policy(data: dict[str, object], name: str) -> object:
    policies = data["policies"]
    assert isinstance(policies, list)
    return next(p for p in policies if p["name"] == name)


def test_a_refused_config_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "engines.yaml"
    path.write_text("# the user's previous file\n")

    with pytest.raises(ConfigError) as caught:
        write_config(path, [replica("same", 1), replica("same", 2)], "smol")

    assert caught.value.source == str(path)
    assert any("duplicate name" in p for p in caught.value.problems)
    assert path.read_text() == "# the user's previous file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["engines.yaml"]

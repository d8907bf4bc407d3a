"""A config of backends and routes alone: the built-in cache-aware profile decides, a route
without `profile` takes the first profile, and one without `model` asks for its name."""

from __future__ import annotations

from typing import Any

from gateway.cli import embedded_config_path
from gateway.config import default_profile
from gateway.config.root import load_config, parse_config
from tests.conftest import StartEmulator, StartGateway

MODEL = "emulated-model"


def minimal(**backends: str) -> dict[str, Any]:
    """Only what has no default: the backends, and a route named as their model."""
    return {
        "backends": [
            {"name": n, "base_url": url, "models": [MODEL]} for n, url in backends.items()
        ],
        "routes": [{"name": MODEL, "backends": list(backends)}],
    }


async def test_backends_and_routes_alone_route_with_the_cache_aware_profile(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engines = [await start_emulator(), await start_emulator()]
    gw = await start_gateway(minimal(a=engines[0].base_url, b=engines[1].base_url))
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "a long question " * 60}]}
    served = []
    for _ in range(2):
        response = await gw.client.post("/v1/chat/completions", json=chat)
        assert response.status_code == 200
        assert response.json()["model"] == MODEL
        served.append(response.headers["x-switchyard-backend"])
        decision_id = response.headers["x-switchyard-decision"]
    decision = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    [candidate, *_] = decision["candidates"]
    assert set(candidate["scores"]) == {"kv-cost", "prefix-cache-scorer", "load-scorer"}
    assert served[1] == served[0]  # the second turn goes back to the cache that holds it


def test_the_builtin_profile_is_the_embedded_examples() -> None:
    embedded = load_config(embedded_config_path())
    builtin = parse_config(minimal(a="http://127.0.0.1:9/v1"))
    [profile] = builtin.profiles
    assert profile == next(p for p in embedded.profiles if p.name == "cache-aware")
    [kv_cost] = builtin.policies
    assert kv_cost == next(p for p in embedded.policies if p.name == "kv-cost")
    assert builtin.profile_of(builtin.routes[0]) == default_profile.PROFILE_NAME
    assert builtin.routes[0].model == MODEL


def test_a_declared_policy_of_the_same_name_tunes_the_builtin_profile() -> None:
    tuned = {"type": "kv-cost-scorer", "name": "kv-cost", "params": {"work_weight": 2.0}}
    config = parse_config({**minimal(a="http://127.0.0.1:9/v1"), "policies": [tuned]})
    [kv_cost] = config.policies
    assert kv_cost.params == {"work_weight": 2.0}


def test_a_route_without_profile_takes_the_first_declared() -> None:
    plugins = [{"ref": "round-robin-scorer"}]
    profiles = [{"name": "first", "plugins": plugins}, {"name": "second", "plugins": plugins}]
    data = minimal(a="http://127.0.0.1:9/v1")
    data["routes"].append({"name": "other", "model": MODEL, "backends": ["a"], "profile": "second"})
    config = parse_config({**data, "profiles": profiles})
    assert [config.profile_of(route) for route in config.routes] == ["first", "second"]
    assert config.policies == []

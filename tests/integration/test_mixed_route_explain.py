"""Issue 14: `switchyard explain` on the mixed-format route shows its three members, each
with the model id it would be asked for, every filter's verdict and every scorer's score
with its reason, and the backend chosen; sending nothing. The live gateway decides the
same request the same way on an idle fleet."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from gateway.cli import main
from tests.conftest import RunningGateway
from tests.integration.mixed_fleet import (
    CLAUDE,
    CLOUD,
    GEMINI,
    HEADER,
    LOCAL,
    MEMBERS,
    ROUTE,
    Fleet,
    mixed_config,
)

FILTERS = {"model-match-filter", "healthy-filter", "placement-filter", "context-window-filter"}
SCORERS = {"least-load-scorer", "round-robin-scorer"}
MODELS = {m.name: m.model for m in MEMBERS}


@pytest.fixture
def sentinel() -> Iterator[socket.socket]:
    """A listening socket every backend points at: a connection to it would queue up."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


@pytest.fixture
def config_path(tmp_path: Path, sentinel: socket.socket) -> Path:
    origin = f"http://127.0.0.1:{sentinel.getsockname()[1]}"
    config = mixed_config({m.name: origin + m.api_root for m in MEMBERS})
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def explain(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    config: Path,
    request: dict[str, Any],
    *headers: str,
    endpoint: str = "chat.completions",
) -> dict[str, Any]:
    """`switchyard explain REQUEST --config CONFIG --endpoint ENDPOINT [--header NAME=VALUE
    ...]`, its JSON."""
    path = tmp_path / "request.json"
    path.write_bytes(orjson.dumps(request))
    args = ["explain", str(path), "--config", str(config), "--endpoint", endpoint]
    for header in headers:
        args += ["--header", header]
    assert main(args) == 0
    result: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    return result


def chat(max_tokens: int = 64) -> dict[str, Any]:
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    return {"model": ROUTE, "messages": messages, "max_tokens": max_tokens}


# The same question in the other client formats the gateway serves.
BODIES: dict[str, dict[str, Any]] = {
    "messages": {
        "model": ROUTE,
        "max_tokens": 64,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "What is the weather in Oslo?"}],
    },
    "responses": {
        "model": ROUTE,
        "max_output_tokens": 64,
        "instructions": "Be brief.",
        "input": "What is the weather in Oslo?",
    },
}
API_PATHS = {"messages": "/v1/messages", "responses": "/v1/responses"}
OTHER_FORMATS = pytest.mark.parametrize("endpoint", list(BODIES))


def by_backend(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["backend"]: c for c in result["candidates"]}


def test_explain_scores_the_three_members_and_names_the_choice(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    config_path: Path,
    sentinel: socket.socket,
) -> None:
    result = explain(capsys, tmp_path, config_path, chat())
    assert result["route"] == ROUTE
    assert result["upstream_models"] == MODELS
    candidates = by_backend(result)
    assert set(candidates) == set(MODELS)
    for name, candidate in candidates.items():
        assert candidate["dropped_by"] is None
        assert candidate["verdicts"].keys() == FILTERS
        assert all(v["keep"] and v["reason"] for v in candidate["verdicts"].values())
        assert candidate["verdicts"]["model-match-filter"]["reason"] == f"serves {MODELS[name]}"
        assert candidate["scores"].keys() == SCORERS
        for score in candidate["scores"].values():
            assert 0.0 <= score["score"] <= 1.0 and score["reason"]
    assert sorted(result["order"]) == sorted(MODELS)
    assert result["chosen"] == result["order"][0]
    totals = [candidates[name]["total"] for name in result["order"]]
    assert totals == sorted(totals, reverse=True)
    assert result["picker"] == "max-score-picker" and result["picker_reason"]
    assert result["placement"] == {"require_tags": [], "sources": {}, "excluded": {}}
    assert result["route_chain"] == [{"route": ROUTE, "decision": result["id"], "left": None}]
    with pytest.raises(BlockingIOError):
        sentinel.accept()


def test_explain_drops_the_member_whose_window_is_too_small(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config_path: Path
) -> None:
    result = explain(capsys, tmp_path, config_path, chat(max_tokens=16_000))
    local = by_backend(result)[LOCAL.name]
    assert local["dropped_by"] == "context-window-filter"
    assert local["drop_reason"].endswith(f"> window {LOCAL.context_window_tokens:,}")
    assert local["scores"] == {}
    assert sorted(result["order"]) == sorted([CLAUDE.name, GEMINI.name])
    assert result["chosen"] in {CLAUDE.name, GEMINI.name}


@pytest.mark.parametrize(
    ("tags", "order"),
    [(GEMINI.tag, [GEMINI.name]), (CLOUD, [CLAUDE.name, GEMINI.name])],
)
def test_explain_keeps_to_the_tags_the_header_requires(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    config_path: Path,
    tags: str,
    order: list[str],
) -> None:
    result = explain(capsys, tmp_path, config_path, chat(), f"{HEADER}={tags}")
    assert sorted(result["order"]) == order and result["chosen"] in order
    assert set(by_backend(result)) == set(order), "excluded members are not candidates"
    placement = result["placement"]
    assert placement["require_tags"] == [tags] and placement["sources"] == {"header": [tags]}
    assert set(placement["excluded"]) == set(MODELS) - set(order)
    assert all(why == f"missing tags: {tags}" for why in placement["excluded"].values())


async def test_the_live_gateway_decides_as_explained(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fleet: Fleet, gw: RunningGateway
) -> None:
    config = tmp_path / "live.yaml"
    config.write_text(yaml.safe_dump(fleet.config), encoding="utf-8")
    explained = explain(capsys, tmp_path, config, chat())
    response = await gw.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 200, response.text
    found = await gw.client.get(
        f"/v1/switchyard/decisions/{response.headers['x-switchyard-decision']}"
    )
    decision = found.json()
    assert decision["order"] == explained["order"]
    assert decision["served_by"] == explained["chosen"]
    assert decision["served_model"] == MODELS[explained["chosen"]]
    live, dry = by_backend(decision), by_backend(explained)
    for name in MODELS:
        assert live[name]["verdicts"] == dry[name]["verdicts"]
        assert live[name]["scores"] == dry[name]["scores"]


@OTHER_FORMATS
def test_explain_reads_a_messages_or_responses_body_onto_the_three_members(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config_path: Path, endpoint: str
) -> None:
    result = explain(capsys, tmp_path, config_path, BODIES[endpoint], endpoint=endpoint)
    assert result["route"] == ROUTE and result["upstream_models"] == MODELS
    assert sorted(result["order"]) == sorted(MODELS)
    for candidate in result["candidates"]:
        assert candidate["verdicts"].keys() == FILTERS and candidate["dropped_by"] is None
    forced = explain(
        capsys, tmp_path, config_path, BODIES[endpoint], f"{HEADER}={GEMINI.tag}", endpoint=endpoint
    )
    assert forced["order"] == [GEMINI.name] and forced["chosen"] == GEMINI.name


@OTHER_FORMATS
async def test_the_live_gateway_decides_other_formats_as_explained(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    fleet: Fleet,
    gw: RunningGateway,
    endpoint: str,
) -> None:
    config = tmp_path / "live.yaml"
    config.write_text(yaml.safe_dump(fleet.config), encoding="utf-8")
    explained = explain(capsys, tmp_path, config, BODIES[endpoint], endpoint=endpoint)
    response = await gw.client.post(API_PATHS[endpoint], json=BODIES[endpoint])
    assert response.status_code == 200, response.text
    assert response.json()["model"] == ROUTE
    decision_id = response.headers["x-switchyard-decision"]
    decision = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    assert decision["order"] == explained["order"]
    assert decision["served_by"] == explained["chosen"]
    assert decision["served_model"] == MODELS[explained["chosen"]]
    assert explained["prompt_tokens"] == decision["prompt_tokens"]

"""A route over differently named models: each backend is asked for its own id, the client
sees the route's name (whole bodies and every stream event), and /v1/models lists routes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config

LOCAL = "qwen2.5-7b-instruct-q4_k_m"
CLOUD = "Qwen/Qwen2.5-7B-Instruct-Turbo"
MESSAGES = [{"role": "user", "content": "hello there"}]


async def two_model_gateway(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> tuple[RunningGateway, Any, Any]:
    local = await start_emulator(models=[LOCAL])
    cloud = await start_emulator(models=[CLOUD])
    config = make_config({"local": local.base_url, "cloud": cloud.base_url}, model=LOCAL)
    config["backends"][1]["models"] = [CLOUD]
    config["routes"] = [
        {
            "name": "qwen",
            "model": LOCAL,
            "backends": ["local", {"backend": "cloud", "model": CLOUD}],
        },
        {"name": "team/qwen", "model": CLOUD, "backends": ["cloud"]},
    ]
    return await start_gateway(config), local, cloud


async def decision_of(gw: RunningGateway, decision_id: str) -> dict[str, Any]:
    found: dict[str, Any] = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    return found


def sse_json(body: bytes) -> list[dict[str, Any]]:
    lines = [line[6:] for line in body.split(b"\n") if line.startswith(b"data: {")]
    return [orjson.loads(line) for line in lines]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {"messages": MESSAGES, "max_tokens": 5}),
        ("/v1/completions", {"prompt": "hello there", "max_tokens": 5}),
        ("/v1/embeddings", {"input": "hello there"}),
    ],
    ids=["chat", "completions", "embeddings"],
)
async def test_each_member_gets_its_model_and_the_client_the_route_name(
    start_emulator: StartEmulator, start_gateway: StartGateway, path: str, body: dict[str, Any]
) -> None:
    gw, _, _ = await two_model_gateway(start_emulator, start_gateway)
    served = {}
    for _ in range(2):  # round-robin: one request to each member
        response = await gw.client.post(path, json={"model": "qwen", **body})
        # The emulators answer 404 for a model they do not serve.
        assert response.status_code == 200, response.text
        assert response.json()["model"] == "qwen"
        decision = await decision_of(gw, response.headers["x-switchyard-decision"])
        served[decision["served_by"]] = decision["served_model"]
    assert served == {"local": LOCAL, "cloud": CLOUD}


async def test_every_stream_event_names_the_route(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw, _, _ = await two_model_gateway(start_emulator, start_gateway)
    body = {
        "model": "qwen",
        "messages": MESSAGES,
        "max_tokens": 6,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    backends = set()
    for _ in range(2):
        response = await gw.client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200
        events = sse_json(response.content)
        assert len(events) >= 7  # six tokens and the usage chunk
        assert {e["model"] for e in events} == {"qwen"}
        assert events[-1]["usage"]["completion_tokens"] == 6
        assert response.content.endswith(b"data: [DONE]\n\n")
        backends.add(response.headers["x-switchyard-backend"])
    assert backends == {"local", "cloud"}


async def test_a_retry_on_another_member_asks_for_that_members_model(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw, local, _ = await two_model_gateway(start_emulator, start_gateway)
    local.runtime.faults.fail_status = 503
    for stream in (False, True):
        tried = []
        for _ in range(2):  # round-robin: one of the two tries the failing member first
            chat = {"model": "qwen", "messages": MESSAGES, "max_tokens": 4, "stream": stream}
            response = await gw.client.post("/v1/chat/completions", json=chat)
            assert response.status_code == 200
            models = [e["model"] for e in sse_json(response.content)] if stream else []
            assert set(models or [response.json()["model"]]) == {"qwen"}
            decision = await decision_of(gw, response.headers["x-switchyard-decision"])
            tried.append([(a["backend"], a["model"], a["outcome"]) for a in decision["attempts"]])
        assert [("local", LOCAL, "upstream_503"), ("cloud", CLOUD, "ok")] in tried


async def test_models_lists_and_finds_public_route_names(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw, _, _ = await two_model_gateway(start_emulator, start_gateway)
    listed = (await gw.client.get("/v1/models")).json()
    assert [m["id"] for m in listed["data"]] == ["qwen", "team/qwen"]
    for name in ("qwen", "team/qwen"):
        found = await gw.client.get(f"/v1/models/{name}")
        assert found.status_code == 200
        assert found.json() == {
            "id": name,
            "object": "model",
            "created": 0,
            "owned_by": "switchyard",
        }
    # An upstream id is not a public name.
    missing = await gw.client.get(f"/v1/models/{CLOUD}")
    assert missing.status_code == 404
    error = missing.json()["error"]
    assert (error["code"], error["param"], error["type"]) == (
        "model_not_found",
        "model",
        "invalid_request_error",
    )

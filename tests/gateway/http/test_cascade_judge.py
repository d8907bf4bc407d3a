"""A cascade's judge route: asked yes or no about a tier's answer that passed its checks;
its no escalates, its yes (or an answer that says neither) lets the answer through, and
its own call is recorded as an attempt of the request."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.loopback import LoopbackServer
from gateway.telemetry.record import RequestRecord
from gateway.tenancy.caller import Caller
from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config
from tests.gateway.http.test_cascade import captured, notes

QUESTION = [{"role": "user", "content": "Name a river in France."}]


class FixedJudge:
    """An OpenAI-compatible judge whose first token is `word`, with log-probabilities."""

    def __init__(self, word: str, p_word: float) -> None:
        self.word, self.p_word = word, p_word
        self.bodies: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        self.bodies.append(orjson.loads(await request.body()))
        other = "no" if self.word == "yes" else "yes"
        top = [
            {"token": self.word, "logprob": math.log(self.p_word)},
            {"token": other, "logprob": math.log(1 - self.p_word)},
        ]
        reply = {
            "id": "judge-1",
            "object": "chat.completion",
            "model": "judge-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.word},
                    "logprobs": {"content": [{**top[0], "top_logprobs": top}]},
                    "finish_reason": "length",
                }
            ],
            "usage": {"prompt_tokens": 40, "completion_tokens": 1, "total_tokens": 41},
        }
        return Response(orjson.dumps(reply), media_type="application/json")


StartJudge = Callable[[str, float], Awaitable[tuple[FixedJudge, str]]]


@pytest.fixture
async def start_judge() -> AsyncIterator[StartJudge]:
    servers: list[LoopbackServer] = []

    async def start(word: str, p_word: float) -> tuple[FixedJudge, str]:
        judge = FixedJudge(word, p_word)
        server = LoopbackServer(judge.app, lifespan="off")
        await server.start()
        servers.append(server)
        return judge, server.url + "/v1"

    yield start
    for server in servers:
        await server.stop()


async def judged_gateway(
    start_emulator: StartEmulator, start_gateway: StartGateway, judge_url: str
) -> RunningGateway:
    small = await start_emulator()
    strong = await start_emulator()
    config = make_config({"small": small.base_url, "strong": strong.base_url})
    config["backends"].append({"name": "judge", "base_url": judge_url, "models": ["judge-model"]})
    config["routes"] = [
        {"name": "cheap", "model": "emulated-model", "backends": ["small"]},
        {"name": "best", "model": "emulated-model", "backends": ["strong"]},
        {"name": "grader", "model": "judge-model", "backends": ["judge"]},
    ]
    config["cascades"] = [
        {
            "name": "auto",
            "tiers": ["cheap", "best"],
            "checks": ["empty"],
            "judge": {"route": "grader", "min_yes": 0.5},
            "start": {"learned": False},
        }
    ]
    return await start_gateway(config)


async def test_a_judge_that_says_no_escalates(
    start_emulator: StartEmulator, start_gateway: StartGateway, start_judge: StartJudge
) -> None:
    judge, url = await start_judge("no", 0.9)
    gw = await judged_gateway(start_emulator, start_gateway, url)
    seen = captured(gw)
    response = await gw.client.post(
        "/v1/chat/completions", json={"model": "auto", "messages": QUESTION, "max_tokens": 20}
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-switchyard-cascade-tier"] == "best"
    assert response.headers["x-switchyard-cascade-escalated"] == "cheap=judge"
    (asked,) = judge.bodies  # the last tier's answer is final: not judged
    assert asked["max_tokens"] == 1 and asked["logprobs"] is True
    assert "Name a river in France." in asked["messages"][-1]["content"]
    outcomes = [(n.tier_route, n.outcome) for n in notes(seen)]
    assert outcomes == [("grader", "judge"), ("cheap", "escalated"), ("best", "passed")]
    escalated = notes(seen)[1]
    assert "P(yes) 0.10 < 0.5" in escalated.failures[0].reason
    judged: RequestRecord = seen[0]
    assert judged.usage is not None and judged.usage.prompt_tokens == 40


async def test_a_judge_that_says_yes_lets_the_cheap_answer_through(
    start_emulator: StartEmulator, start_gateway: StartGateway, start_judge: StartJudge
) -> None:
    _, url = await start_judge("yes", 0.8)
    gw = await judged_gateway(start_emulator, start_gateway, url)
    response = await gw.client.post(
        "/v1/chat/completions", json={"model": "auto", "messages": QUESTION, "max_tokens": 20}
    )
    assert response.headers["x-switchyard-cascade-tier"] == "cheap"
    assert response.headers["x-switchyard-cascade-checks"] == "passed"


async def test_the_judge_goes_only_where_the_keys_placement_tags_allow(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    start_judge: StartJudge,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judge_eu, url_eu = await start_judge("yes", 0.9)
    judge_us, url_us = await start_judge("yes", 0.9)
    small = await start_emulator()
    strong = await start_emulator()
    config = make_config({"small": small.base_url, "strong": strong.base_url})
    for backend in config["backends"]:
        backend["tags"] = ["eu"]
    config["backends"] += [
        {"name": "judge-eu", "base_url": url_eu, "models": ["judge-model"], "tags": ["eu"]},
        {"name": "judge-us", "base_url": url_us, "models": ["judge-model"]},
    ]
    config["routes"] = [
        {"name": "cheap", "model": "emulated-model", "backends": ["small"]},
        {"name": "best", "model": "emulated-model", "backends": ["strong"]},
        {"name": "grader", "model": "judge-model", "backends": ["judge-us", "judge-eu"]},
    ]
    config["cascades"] = [
        {
            "name": "auto",
            "tiers": ["cheap", "best"],
            "checks": ["empty"],
            "judge": {"route": "grader"},
            "start": {"learned": False},
        }
    ]
    gw = await start_gateway(config)
    eu_only = Caller(key_id="key_eu", kind="virtual", tags=frozenset({"eu"}))
    monkeypatch.setattr(gw.gateway, "authorize", lambda authorization: eu_only)
    body = {"model": "auto", "messages": QUESTION, "max_tokens": 10}
    for _ in range(4):
        assert (await gw.client.post("/v1/chat/completions", json=body)).status_code == 200
    assert len(judge_eu.bodies) == 4 and judge_us.bodies == []

"""A Messages client's own `cache_control` breakpoints through the real app: kept in place
for an Anthropic backend (an emulator whose received bodies are recorded), stripped for an
OpenAI-format one, refused beyond Anthropic's 4."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import orjson
import pytest

from emulator.app import create_app
from emulator.engine.runtime_state import EmulatorRuntime
from emulator.loopback import LoopbackServer
from emulator.provider_cache import PromptCacheOptions
from emulator.settings import EmulatorSettings
from tests.conftest import RunningGateway, StartGateway
from tests.gateway.http.anthropic_ingress.test_messages_api import HEADERS, CaptureBackend

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

EPHEMERAL: dict[str, Any] = {"type": "ephemeral"}
LONG: dict[str, Any] = {"type": "ephemeral", "ttl": "1h"}
TOOLS: list[dict[str, Any]] = [
    {"name": "lookup", "description": "Look a word up", "input_schema": {"type": "object"}},
    {
        "name": "get_weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        "cache_control": LONG,
    },
]
SYSTEM: list[dict[str, Any]] = [
    {"type": "text", "text": "You are terse. " * 40, "cache_control": LONG},
    {"type": "text", "text": "Answer in English."},
]
CONVERSATION: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Weather in Paris? " * 30, "cache_control": EPHEMERAL},
            {"type": "text", "text": "Be brief."},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "P"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "sunny, 21 C",
                "cache_control": EPHEMERAL,
            }
        ],
    },
]
MARKED: dict[str, Any] = {
    "model": "claude",
    "max_tokens": 8,
    "system": SYSTEM,
    "tools": TOOLS,
    "messages": CONVERSATION,
}


def marks(node: Any, path: tuple[str | int, ...] = ()) -> dict[tuple[str | int, ...], Any]:
    """Every `cache_control` in a Messages body, by the path of the block carrying it."""
    found: dict[tuple[str | int, ...], Any] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "cache_control":
                found[path] = value
            else:
                found |= marks(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found |= marks(value, (*path, index))
    return found


class Recorder:
    """An ASGI app in front of another, keeping each `/v1/messages` body it is sent."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/v1/messages":
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        self.bodies.append(orjson.loads(body))
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


@pytest.fixture
async def claude() -> AsyncIterator[tuple[Recorder, str]]:
    """An emulated Anthropic-format backend with Anthropic's explicit prompt cache."""
    cache = PromptCacheOptions(semantics="explicit", min_prefix_tokens=64)
    runtime = EmulatorRuntime(
        EmulatorSettings(token_delay_ms=0.0, prompt_cache=cache, models=["claude-emulated"])
    )
    recorder = Recorder(create_app(runtime))
    server = LoopbackServer(recorder, lifespan="off")
    await server.start()
    yield recorder, server.url + "/v1"
    await server.stop()
    await runtime.aclose()


@pytest.fixture
async def gw(
    claude: tuple[Recorder, str], capture: tuple[CaptureBackend, str], start_gateway: StartGateway
) -> RunningGateway:
    plugins = [{"ref": "healthy-filter"}, {"ref": "round-robin-scorer"}]
    return await start_gateway(
        {
            "backends": [
                {
                    "name": "anthropic",
                    "kind": "anthropic",
                    "base_url": claude[1],
                    "models": ["claude-emulated"],
                },
                {"name": "openai", "base_url": capture[1], "models": ["gpt-emulated"]},
            ],
            "routes": [
                {"name": "claude", "model": "claude-emulated", "backends": ["anthropic"]},
                {"name": "gpt", "model": "gpt-emulated", "backends": ["openai"]},
            ],
            "profiles": [{"name": "balanced", "plugins": [*plugins, {"ref": "max-score-picker"}]}],
            "health": {"active_probes": False},
        }
    )


async def test_anthropic_backend_gets_the_clients_breakpoints_in_place(
    gw: RunningGateway, claude: tuple[Recorder, str]
) -> None:
    recorder, _ = claude
    response = await gw.client.post("/v1/messages", json=MARKED, headers=HEADERS)
    assert response.status_code == 200, response.text
    [sent] = recorder.bodies
    assert (
        marks(sent)
        == marks(MARKED)
        == {
            ("system", 0): LONG,
            ("tools", 1): LONG,
            ("messages", 0, "content", 0): EPHEMERAL,
            ("messages", 2, "content", 0): EPHEMERAL,
        }
    )
    assert [block["text"] for block in sent["system"]] == [b["text"] for b in SYSTEM]
    assert sent["messages"][0]["content"][1] == {"type": "text", "text": "Be brief."}
    decision_id = response.headers["x-switchyard-decision"]
    decision = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    plan = decision["cache_breakpoints"]["anthropic"]
    assert plan["added"] is False and plan["reason"] == "the client's own"
    assert plan["ttl"] == "5m", "the last breakpoint's retention"

    again = await gw.client.post("/v1/messages", json=MARKED, headers=HEADERS)
    usage = again.json()["usage"]
    assert usage["cache_read_input_tokens"] > 0, "the emulator cached at the client's marks"


async def test_a_marked_tool_use_stays_on_its_block(
    gw: RunningGateway, claude: tuple[Recorder, str]
) -> None:
    recorder, _ = claude
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look.", "cache_control": EPHEMERAL},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"city": "P"},
                "cache_control": {"type": "ephemeral", "ttl": "5m"},
            },
        ],
    }
    request = {**MARKED, "system": "plain", "tools": TOOLS[:1]}
    request["messages"] = [CONVERSATION[0], assistant, CONVERSATION[2]]
    response = await gw.client.post("/v1/messages", json=request, headers=HEADERS)
    assert response.status_code == 200, response.text
    [sent] = recorder.bodies
    assert marks(sent) == marks(request)
    # The client's own request, as it came: an Anthropic backend gets it untranslated.
    assert {**sent, "model": request["model"]} == request


async def test_openai_backend_gets_no_breakpoints(
    gw: RunningGateway, capture: tuple[CaptureBackend, str]
) -> None:
    backend, _ = capture
    request = {**MARKED, "model": "gpt"}
    response = await gw.client.post("/v1/messages", json=request, headers=HEADERS)
    assert response.status_code == 200, response.text
    [sent] = backend.bodies
    assert b"cache_control" not in orjson.dumps(sent)
    system = sent["messages"][0]
    assert system == {"role": "system", "content": "\n\n".join(b["text"] for b in SYSTEM)}
    assert sent["messages"][1]["content"] == [
        {"type": "text", "text": CONVERSATION[0]["content"][0]["text"]},
        {"type": "text", "text": "Be brief."},
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {
                "system": [
                    {**SYSTEM[0], "cache_control": EPHEMERAL},
                    {**SYSTEM[1], "cache_control": EPHEMERAL},
                ]
            },
            "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        ),
        (
            {"system": [{**SYSTEM[0], "cache_control": {"type": "ephemeral", "ttl": "2h"}}]},
            "system.0.cache_control.ttl",
        ),
        (
            {"tools": [TOOLS[0], {**TOOLS[1], "cache_control": EPHEMERAL}]},
            "ttl '1h' must come before those with ttl '5m'",
        ),
        (
            {"tools": [{**TOOLS[0], "cache_control": {"type": "persistent"}}]},
            "tools.0.cache_control.type",
        ),
    ],
)
async def test_invalid_breakpoints_are_a_400_in_anthropics_shape(
    gw: RunningGateway, claude: tuple[Recorder, str], change: dict[str, Any], message: str
) -> None:
    recorder, _ = claude
    response = await gw.client.post("/v1/messages", json={**MARKED, **change}, headers=HEADERS)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert message in body["error"]["message"]
    assert recorder.bodies == []

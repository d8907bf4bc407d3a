"""The gateway as the official openai SDK sees it: real loopback HTTP, emulated engines."""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import openai
import orjson
import pytest
import pytest_asyncio
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from emulator.loopback import LoopbackServer
from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings
from gateway.config.root import parse_config
from gateway.http.app import create_app
from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config

MODEL = "emulated-model"
MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello there"}]
WEATHER_TOOL: ChatCompletionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "days", "unit"],
        },
    },
}
# Two filters' verdicts and two scorers' scores show up for every candidate.
PROFILE: list[dict[str, Any]] = [
    {"ref": "model-match-filter"},
    {"ref": "healthy-filter"},
    {"ref": "load", "weight": 1.0},
    {"ref": "round-robin-scorer", "weight": 0.5},
    {"ref": "max-score-picker"},
]
POLICIES = [{"type": "least-load-scorer", "name": "load"}]

SdkFor = Callable[..., openai.AsyncOpenAI]


@pytest.fixture
async def sdk_for() -> AsyncIterator[SdkFor]:
    """An SDK client for a running gateway; every client made is closed afterwards."""
    made: list[openai.AsyncOpenAI] = []

    def make(gw: RunningGateway, api_key: str = "x") -> openai.AsyncOpenAI:
        client = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key=api_key, max_retries=0)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.close()


async def start_fleet(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    *,
    engines: int = 2,
    faults: dict[str, Any] | None = None,
    **sections: Any,
) -> RunningGateway:
    """A gateway over `engines` emulators (all with the same faults), route `default`."""
    urls = {}
    for i in range(engines):
        server = await start_emulator(faults=faults or {})
        urls[f"engine-{'abc'[i]}"] = server.base_url
    config = make_config(urls, profile=PROFILE, policies=POLICIES, **sections)
    return await start_gateway(config)


@dataclass
class Fleet:
    gw: RunningGateway
    sdk: openai.AsyncOpenAI


@pytest_asyncio.fixture(loop_scope="class", scope="class")
async def fleet() -> AsyncIterator[Fleet]:
    """One healthy two-engine gateway (routes `default` and `second`) shared by a class:
    starting and stopping servers costs more than the requests these tests make."""
    async with contextlib.AsyncExitStack() as stack:
        urls = {}
        for name in ("engine-a", "engine-b"):
            # Answers exactly max_tokens long: the tests count tokens and chunks.
            engine = EmulatorServer(EmulatorSettings(token_delay_ms=0, ignore_eos=True))
            await stack.enter_async_context(engine)
            urls[name] = engine.base_url
        config = make_config(urls, profile=PROFILE, policies=POLICIES)
        config["routes"].append({"name": "second", "model": MODEL, "backends": list(urls)})
        parsed = parse_config(config)
        app = create_app(parsed)
        server = LoopbackServer(app, lifespan="on", keep_alive_s=parsed.server.keep_alive_s)
        await server.start()
        gw = RunningGateway(server, app.state.gateway, app.state.runtime)
        stack.push_async_callback(gw.close)
        sdk = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        stack.push_async_callback(sdk.close)
        yield Fleet(gw, sdk)


@pytest.mark.asyncio(loop_scope="class")
class TestHealthyFleet:
    async def test_models_lists_route_names(self, fleet: Fleet) -> None:
        page = await fleet.sdk.models.list()
        assert [m.id for m in page.data] == ["default", "second"]
        assert {m.owned_by for m in page.data} == {"switchyard"}

    async def test_chat_returns_content_and_usage(self, fleet: Fleet) -> None:
        completion = await fleet.sdk.chat.completions.create(
            model="default", messages=MESSAGES, max_tokens=7
        )
        choice = completion.choices[0]
        assert isinstance(choice.message.content, str) and choice.message.content
        assert choice.finish_reason == "length"
        assert completion.usage is not None and completion.usage.completion_tokens == 7
        # The upstream model was asked for, and the reply names the route the client asked.
        assert completion.model == "default"

    async def test_stream_with_usage_ends_with_a_usage_only_chunk(self, fleet: Fleet) -> None:
        whole = await fleet.sdk.chat.completions.create(
            model="default", messages=MESSAGES, max_tokens=6
        )
        stream = await fleet.sdk.chat.completions.create(
            model="default",
            messages=MESSAGES,
            max_tokens=6,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        *content_chunks, last = chunks
        assert last.choices == []
        assert last.usage is not None and last.usage.completion_tokens == 6
        assert all(chunk.usage is None for chunk in content_chunks)
        text = "".join(c.choices[0].delta.content or "" for c in content_chunks if c.choices)
        assert text == whole.choices[0].message.content
        assert content_chunks[-1].choices[0].finish_reason == "length"

    async def test_tool_call_arguments_are_json_with_required_properties(
        self,
        fleet: Fleet,
    ) -> None:
        completion = await fleet.sdk.chat.completions.create(
            model="default",
            messages=MESSAGES,
            tools=[WEATHER_TOOL],
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
        )
        choice = completion.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.tool_calls is not None
        call = choice.message.tool_calls[0]
        assert call.type == "function" and call.function.name == "get_weather"
        arguments = orjson.loads(call.function.arguments)
        assert {"city", "days", "unit"} <= arguments.keys()

    async def test_streamed_tool_call_assembles_to_json(self, fleet: Fleet) -> None:
        stream = await fleet.sdk.chat.completions.create(
            model="default",
            messages=MESSAGES,
            tools=[WEATHER_TOOL],
            tool_choice="required",
            stream=True,
        )
        names: list[str] = []
        ids: list[str] = []
        fragments: list[str] = []
        finish = None
        async for chunk in stream:
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                for call in choice.delta.tool_calls or []:
                    ids += [call.id] if call.id else []
                    if call.function is not None:
                        names += [call.function.name] if call.function.name else []
                        fragments.append(call.function.arguments or "")
        assert names == ["get_weather"] and len(ids) == 1
        assert finish == "tool_calls"
        assert {"city", "days", "unit"} <= orjson.loads("".join(fragments)).keys()

    async def test_response_format_json_schema(self, fleet: Fleet) -> None:
        schema: dict[str, object] = {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name", "age"],
        }
        completion = await fleet.sdk.chat.completions.create(
            model="default",
            messages=MESSAGES,
            response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": schema}},
        )
        document = orjson.loads(completion.choices[0].message.content or "")
        assert isinstance(document["name"], str) and isinstance(document["age"], int)

    async def test_response_format_json_object(self, fleet: Fleet) -> None:
        completion = await fleet.sdk.chat.completions.create(
            model="default", messages=MESSAGES, response_format={"type": "json_object"}
        )
        assert isinstance(orjson.loads(completion.choices[0].message.content or ""), dict)

    async def test_n_gives_several_choices(self, fleet: Fleet) -> None:
        completion = await fleet.sdk.chat.completions.create(
            model="default", messages=MESSAGES, n=2, max_tokens=4
        )
        assert sorted(c.index for c in completion.choices) == [0, 1]
        assert completion.usage is not None and completion.usage.completion_tokens == 8

    async def test_logprobs_cover_every_token(self, fleet: Fleet) -> None:
        completion = await fleet.sdk.chat.completions.create(
            model="default", messages=MESSAGES, max_tokens=5, logprobs=True, top_logprobs=2
        )
        choice = completion.choices[0]
        assert choice.logprobs is not None and choice.logprobs.content is not None
        tokens = choice.logprobs.content
        assert "".join(t.token for t in tokens) == choice.message.content
        assert all(t.logprob <= 0 and len(t.top_logprobs) == 2 for t in tokens)

    async def test_completions_endpoint(self, fleet: Fleet) -> None:
        completion = await fleet.sdk.completions.create(
            model="default", prompt="Once upon", max_tokens=5
        )
        assert completion.choices[0].text
        assert completion.usage is not None and completion.usage.completion_tokens == 5
        stream = await fleet.sdk.completions.create(
            model="default", prompt="Once upon", max_tokens=5, stream=True
        )
        assert "".join([chunk.choices[0].text async for chunk in stream if chunk.choices]) == (
            completion.choices[0].text
        )

    async def test_embeddings_endpoint(self, fleet: Fleet) -> None:
        # Unless told otherwise the SDK asks for base64 and decodes it itself.
        embeddings = fleet.sdk.embeddings
        for result in (
            await embeddings.create(model="default", input=["a", "b"]),
            await embeddings.create(model="default", input=["a", "b"], encoding_format="float"),
        ):
            assert [d.index for d in result.data] == [0, 1]
            vector = result.data[0].embedding
            assert len(vector) == 64 and math.isclose(math.hypot(*vector), 1.0, rel_tol=1e-5)

    async def test_headers_name_the_decision_and_it_explains_every_candidate(
        self,
        fleet: Fleet,
    ) -> None:
        gw = fleet.gw
        raw = await fleet.sdk.chat.completions.with_raw_response.create(
            model="default", messages=MESSAGES, max_tokens=3
        )
        backend = raw.headers["x-switchyard-backend"]
        decision_id = raw.headers["x-switchyard-decision"]
        assert backend in {"engine-a", "engine-b"}
        assert raw.parse().usage is not None

        found = await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")
        assert found.status_code == 200
        decision = found.json()
        assert decision["id"] == decision_id and decision["route"] == "default"
        assert decision["chosen"] == decision["served_by"] == backend
        assert decision["status"] == 200
        assert decision["attempts"][-1]["backend"] == backend
        assert decision["attempts"][-1]["outcome"] == "ok"
        assert decision["picker"] == "max-score-picker" and decision["picker_reason"]
        assert {c["backend"] for c in decision["candidates"]} == {"engine-a", "engine-b"}
        for candidate in decision["candidates"]:
            assert candidate["scores"].keys() == {"load", "round-robin-scorer"}
            for score in candidate["scores"].values():
                assert 0.0 <= score["score"] <= 1.0 and score["reason"]
            assert candidate["verdicts"].keys() == {"model-match-filter", "healthy-filter"}
            assert all(v["keep"] and v["reason"] for v in candidate["verdicts"].values())
            assert candidate["dropped_by"] is None
        best = max(decision["candidates"], key=lambda c: c["total"])
        assert best["backend"] == backend

    async def test_stream_headers_name_the_backend(self, fleet: Fleet) -> None:
        async with fleet.sdk.chat.completions.with_streaming_response.create(
            model="default", messages=MESSAGES, max_tokens=3, stream=True
        ) as response:
            assert response.headers["x-switchyard-backend"] in {"engine-a", "engine-b"}
            assert response.headers["x-switchyard-decision"]
            assert response.headers["content-type"].startswith("text/event-stream")
            body = b"".join([part async for part in response.iter_bytes()])
        assert body.rstrip().endswith(b"data: [DONE]")

    async def test_unknown_model_is_not_found(self, fleet: Fleet) -> None:
        with pytest.raises(openai.NotFoundError) as caught:
            await fleet.sdk.chat.completions.create(model="no-such-route", messages=MESSAGES)
        assert caught.value.status_code == 404
        assert caught.value.param == "model" and caught.value.code == "model_not_found"
        assert "no-such-route" in caught.value.message

    @pytest.mark.parametrize("stream", [False, True])
    async def test_backend_4xx_is_relayed_as_the_backend_wrote_it(
        self, fleet: Fleet, stream: bool
    ) -> None:
        with pytest.raises(openai.BadRequestError) as caught:
            await fleet.sdk.chat.completions.create(
                model="default",
                messages=MESSAGES,
                tools=[WEATHER_TOOL],
                tool_choice={"type": "function", "function": {"name": "get_time"}},
                stream=stream,
            )
        # The emulator's own error body, not a gateway rewrite of it.
        assert caught.value.param == "tool_choice"
        assert caught.value.message.endswith("'tool_choice' names unknown function 'get_time'.")
        assert caught.value.response.headers["x-switchyard-decision"]

    @pytest.mark.parametrize(
        ("fields", "param"),
        [
            ({"messages": []}, "messages"),
            ({"messages": [{"content": "no role"}]}, "messages.0.role"),
            ({"n": 0}, "n"),
            ({"max_tokens": 0}, "max_tokens"),
            ({"stream": "yes please"}, "stream"),
        ],
    )
    async def test_bad_field_is_a_bad_request_naming_the_param(
        self, fleet: Fleet, fields: dict[str, Any], param: str
    ) -> None:
        request: dict[str, Any] = {"model": "default", "messages": MESSAGES, **fields}
        with pytest.raises(openai.BadRequestError) as caught:
            await fleet.sdk.chat.completions.create(**request)
        assert caught.value.status_code == 400
        assert caught.value.param == param
        assert caught.value.type == "invalid_request_error"


async def test_wrong_api_key_is_an_authentication_error(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    sdk_for: SdkFor,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWITCHYARD_TEST_CLIENT_KEYS", "key-one, key-two")
    gw = await start_fleet(
        start_emulator, start_gateway, server={"api_keys_env": "SWITCHYARD_TEST_CLIENT_KEYS"}
    )
    wrong = sdk_for(gw, api_key="key-three")
    with pytest.raises(openai.AuthenticationError) as caught:
        await wrong.chat.completions.create(model="default", messages=MESSAGES)
    assert caught.value.status_code == 401 and caught.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        await wrong.models.list()
    right = sdk_for(gw, api_key="key-two")
    completion = await right.chat.completions.create(
        model="default", messages=MESSAGES, max_tokens=2
    )
    assert completion.usage is not None and completion.usage.completion_tokens == 2


async def test_all_backends_failing_is_an_internal_server_error(
    start_emulator: StartEmulator, start_gateway: StartGateway, sdk_for: SdkFor
) -> None:
    gw = await start_fleet(start_emulator, start_gateway, faults={"fail_status": 500})
    with pytest.raises(openai.InternalServerError) as caught:
        await sdk_for(gw).chat.completions.create(model="default", messages=MESSAGES)
    error = caught.value
    assert error.status_code == 502
    assert error.type == "upstream_error" and error.code == "upstream_500"
    decision_id = error.response.headers["x-switchyard-decision"]
    decision = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    assert sorted(a["backend"] for a in decision["attempts"]) == ["engine-a", "engine-b"]
    assert {a["outcome"] for a in decision["attempts"]} == {"upstream_500"}
    assert decision["status"] == 502 and decision["served_by"] is None


async def test_all_backends_rate_limited_is_a_rate_limit_error(
    start_emulator: StartEmulator, start_gateway: StartGateway, sdk_for: SdkFor
) -> None:
    # Retry-After above retry.max_retry_after_s: the gateway does not wait, the client does.
    gw = await start_fleet(
        start_emulator, start_gateway, faults={"fail_status": 429, "retry_after_s": 30}
    )
    with pytest.raises(openai.RateLimitError) as caught:
        await sdk_for(gw).chat.completions.create(model="default", messages=MESSAGES)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "30"


async def test_stream_cut_by_the_backend_raises_api_error_mid_iteration(
    start_emulator: StartEmulator, start_gateway: StartGateway, sdk_for: SdkFor
) -> None:
    gw = await start_fleet(
        start_emulator, start_gateway, engines=1, faults={"cut_stream_after_chunks": 3}
    )
    stream = await sdk_for(gw).chat.completions.create(
        model="default", messages=MESSAGES, max_tokens=20, stream=True
    )
    received = []
    with pytest.raises(openai.APIError) as caught:
        async for chunk in stream:
            received.append(chunk)
    # The chunks before the cut arrive; then the gateway's error event becomes a plain
    # APIError (no status: the HTTP response itself was a 200).
    assert len(received) == 3
    error = caught.value
    assert type(error) is openai.APIError
    assert error.type == "upstream_error" and error.code == "upstream_protocol_error"
    assert "engine-a" in error.message
    assert error.body == {
        "message": error.message,
        "type": "upstream_error",
        "param": None,
        "code": "upstream_protocol_error",
    }


async def test_backend_error_event_mid_stream_reaches_the_sdk(
    start_emulator: StartEmulator, start_gateway: StartGateway, sdk_for: SdkFor
) -> None:
    gw = await start_fleet(
        start_emulator, start_gateway, engines=1, faults={"error_event_after_chunks": 2}
    )
    stream = await sdk_for(gw).chat.completions.create(
        model="default", messages=MESSAGES, max_tokens=20, stream=True
    )
    received = []
    with pytest.raises(openai.APIError) as caught:
        async for chunk in stream:
            received.append(chunk)
    assert len(received) == 2
    assert caught.value.code == "emulated_stream_error"

"""Wire compatibility with Google's official google-genai SDK, pointed at the emulator."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.server import EmulatorServer
from tests.emulator.conftest import MODEL, StartEmulator
from tests.emulator.wire.test_gemini_format import SYSTEM

genai = pytest.importorskip(
    "google.genai", reason="the google-genai SDK is not installed (pip install -e '.[dev]')"
)
types = pytest.importorskip("google.genai.types")
errors = pytest.importorskip("google.genai.errors")

# The SDK's own aiohttp session class warns on import; nothing the emulator does.
pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class:DeprecationWarning")


def _sdk(server: EmulatorServer, api_key: str = "unused") -> Any:
    options = types.HttpOptions(base_url=server.origin, api_version="v1beta")
    return genai.Client(api_key=api_key, http_options=options).aio


def _config(**fields: Any) -> Any:
    return types.GenerateContentConfig(**fields)


async def test_sdk_generate_and_stream(emulator: EmulatorServer) -> None:
    sdk = _sdk(emulator)
    try:
        answer = await sdk.models.generate_content(
            model=MODEL, contents="hi", config=_config(max_output_tokens=5)
        )
        assert len(answer.text.split()) == 5
        assert answer.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
        assert answer.usage_metadata.candidates_token_count == 5
        pieces = [
            chunk.text
            async for chunk in await sdk.models.generate_content_stream(
                model=MODEL, contents="hi", config=_config(max_output_tokens=5)
            )
        ]
        assert len(pieces) == 5 and "".join(pieces) == answer.text
        names = [model.name async for model in await sdk.models.list()]
        assert names == [f"models/{MODEL}"]
    finally:
        await sdk.aclose()


async def test_sdk_function_call_and_thoughts(emulator: EmulatorServer) -> None:
    city = types.Schema(type=types.Type.STRING)
    declaration = types.FunctionDeclaration(
        name="get_weather",
        parameters=types.Schema(
            type=types.Type.OBJECT, properties={"city": city}, required=["city"]
        ),
    )
    tools = [types.Tool(function_declarations=[declaration])]
    manual = types.AutomaticFunctionCallingConfig(disable=True)
    thinking = types.ThinkingConfig(thinking_budget=2, include_thoughts=True)
    sdk = _sdk(emulator)
    try:
        called = await sdk.models.generate_content(
            model=MODEL,
            contents="hi",
            config=_config(tools=tools, automatic_function_calling=manual),
        )
        [call] = called.function_calls
        assert (call.name, call.args) == ("get_weather", {"city": "example"})
        thought = await sdk.models.generate_content(
            model=MODEL,
            contents="hi",
            config=_config(max_output_tokens=6, thinking_config=thinking),
        )
    finally:
        await sdk.aclose()
    parts = thought.candidates[0].content.parts
    assert [bool(part.thought) for part in parts] == [True, False]
    assert thought.usage_metadata.thoughts_token_count == 2
    assert len(thought.text.split()) == 4  # the thought parts are not the answer's text


async def test_sdk_sees_cached_content_tokens(start_emulator: StartEmulator) -> None:
    server = await start_emulator(cost_model="batched", time_scale=0.01)
    sdk = _sdk(server)
    config = _config(max_output_tokens=3, system_instruction=SYSTEM)
    try:
        for _ in range(2):
            answer = await sdk.models.generate_content(model=MODEL, contents="hi", config=config)
    finally:
        await sdk.aclose()
    usage = answer.usage_metadata
    assert usage.cached_content_token_count > usage.prompt_token_count // 2


async def _generate(sdk: Any) -> Any:
    return await sdk.models.generate_content(
        model=MODEL, contents="hi", config=_config(max_output_tokens=16)
    )


async def test_sdk_error_types(start_emulator: StartEmulator) -> None:
    server = await start_emulator(api_key="secret", rate_limit_tokens_per_minute=20)
    refused, allowed = _sdk(server, api_key="wrong"), _sdk(server, api_key="secret")
    try:
        with pytest.raises(errors.ClientError) as unauthenticated:
            await _generate(refused)
        await _generate(allowed)  # 1 prompt + 16 output tokens: the budget is spent
        with pytest.raises(errors.ClientError) as exhausted:
            await _generate(allowed)
    finally:
        await refused.aclose()
        await allowed.aclose()
    assert (unauthenticated.value.code, unauthenticated.value.status) == (401, "UNAUTHENTICATED")
    assert (exhausted.value.code, exhausted.value.status) == (429, "RESOURCE_EXHAUSTED")
    [retry] = exhausted.value.details["error"]["details"]
    assert retry["@type"] == "type.googleapis.com/google.rpc.RetryInfo"


async def test_sdk_server_errors(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"fail_status": 503, "fail_count": 1})
    sdk = _sdk(server)
    try:
        with pytest.raises(errors.ServerError) as caught:
            await sdk.models.generate_content(model=MODEL, contents="hi")
    finally:
        await sdk.aclose()
    assert (caught.value.code, caught.value.status) == (503, "UNAVAILABLE")

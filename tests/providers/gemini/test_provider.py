"""The real Gemini adapter against a scripted Gemini-wire server on loopback.

Each test drives send(), open_stream() or health() and checks both sides: what reached
the server (path, query, headers, translated body) and what the adapter handed back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from providers.base import Deadlines, UpstreamRequest
from providers.errors import UnsupportedRequest, UpstreamCredentialsRefused, UpstreamStatusError
from providers.gemini.provider import DEFAULT_BASE_URL, GeminiProvider
from providers.registry import open_provider
from providers.settings import ProviderSettings
from tests.providers.fake_upstream import Reply, ScriptedServer
from tests.providers.gemini.fake_gemini import sse

KEY = "AIzaSy-test-key-0042"
MODEL = "gemini-2.5-flash"
DEADLINES = Deadlines(connect_s=2.0, first_byte_s=5.0, between_chunks_s=5.0)
USAGE = {"promptTokenCount": 9, "candidatesTokenCount": 2, "thoughtsTokenCount": 5}


def chat(stream: bool = False, **fields: Any) -> UpstreamRequest:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], **fields}
    if stream:
        body["stream"] = True
    return UpstreamRequest("/chat/completions", orjson.dumps(body), stream=stream)


def answer(*parts: dict[str, Any], finish: str | None = "STOP", **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], **extra}


@pytest.fixture
async def provider(upstream: ScriptedServer) -> AsyncIterator[GeminiProvider]:
    settings = ProviderSettings(
        name="gem",
        kind="gemini",
        base_url=upstream.url + "/v1beta/",
        api_key=KEY,
        models=(MODEL,),
    )
    opened = await open_provider(settings)
    assert isinstance(opened, GeminiProvider)
    try:
        yield opened
    finally:
        await opened.close()


def assert_keyed(headers: dict[str, str], query: str) -> None:
    """The key travels in x-goog-api-key only: not as a bearer token, not in the URL."""
    assert headers["x-goog-api-key"] == KEY
    assert "authorization" not in headers
    assert KEY not in query


async def test_send_translates_both_ways(
    upstream: ScriptedServer, provider: GeminiProvider
) -> None:
    upstream.reply(
        Reply(body=orjson.dumps(answer({"text": "Hello!"}, usageMetadata=USAGE, responseId="r9")))
    )
    request = chat(
        max_tokens=50,
        messages=[{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hi"}],
    )
    response = await provider.send(request, DEADLINES)

    seen = upstream.seen[0]
    assert (seen.method, seen.path, seen.query) == (
        "POST",
        f"/v1beta/models/{MODEL}:generateContent",
        "",
    )
    assert_keyed(seen.headers, seen.query)
    assert seen.headers["content-type"] == "application/json"
    assert seen.json() == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "systemInstruction": {"parts": [{"text": "Be kind."}]},
        "generationConfig": {"maxOutputTokens": 50},
    }
    assert (response.status, response.content_type) == (200, "application/json")
    completion = orjson.loads(response.body)
    assert completion["id"] == "chatcmpl-r9"
    assert completion["choices"][0]["message"] == {"role": "assistant", "content": "Hello!"}
    assert completion["choices"][0]["finish_reason"] == "stop"
    assert completion["usage"]["completion_tokens"] == 7
    assert completion["usage"]["completion_tokens_details"] == {"reasoning_tokens": 5}


async def test_stream_translates_event_by_event(
    upstream: ScriptedServer, provider: GeminiProvider
) -> None:
    upstream.reply(
        Reply(
            body=sse(
                answer({"text": "Hmm.", "thought": True}, finish=None),
                answer({"text": "Hel"}, finish=None),
                answer({"text": "lo"}, usageMetadata=USAGE),
            )
        )
    )
    stream = await provider.open_stream(
        chat(stream=True, stream_options={"include_usage": True}), DEADLINES
    )
    try:
        rest = b"".join([chunk async for chunk in stream.rest()])
    finally:
        await stream.aclose()

    seen = upstream.seen[0]
    assert (seen.path, seen.query) == (f"/v1beta/models/{MODEL}:streamGenerateContent", "alt=sse")
    assert_keyed(seen.headers, seen.query)
    assert stream.content_type == "text/event-stream"
    events = [e[6:] for e in (stream.first_chunk + rest).split(b"\n\n") if e]
    assert events[-1] == b"[DONE]"
    chunks = [orjson.loads(e) for e in events[:-1]]
    assert [c["choices"][0]["delta"] for c in chunks if c["choices"]] == [
        {"role": "assistant", "content": ""},
        {"reasoning_content": "Hmm."},
        {"content": "Hel"},
        {"content": "lo"},
        {},
    ]
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["prompt_tokens"] == 9


async def test_an_error_event_mid_stream_raises_from_rest(
    upstream: ScriptedServer, provider: GeminiProvider
) -> None:
    error = {
        "code": 429,
        "message": "Quota exceeded",
        "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}],
    }
    upstream.reply(Reply(body=sse(answer({"text": "Par"}, finish=None), {"error": error})))
    stream = await provider.open_stream(chat(stream=True), DEADLINES)
    received = [stream.first_chunk]
    try:
        with pytest.raises(UpstreamStatusError) as caught:
            async for chunk in stream.rest():
                received.append(chunk)
    finally:
        await stream.aclose()
    assert b'"content":"Par"' in b"".join(received)
    assert b"[DONE]" not in b"".join(received)
    assert (caught.value.status, caught.value.retry_after_s) == (429, 2.0)


async def test_a_rate_limit_says_when_to_retry(
    upstream: ScriptedServer, provider: GeminiProvider
) -> None:
    body = {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7.25s"}
            ],
        }
    }
    upstream.reply(
        Reply(429, orjson.dumps(body)), Reply(429, orjson.dumps(body), {"retry-after": "3"})
    )
    for expected_s in (7.25, 3.0):
        with pytest.raises(UpstreamStatusError) as caught:
            await provider.send(chat(), DEADLINES)
        error = caught.value
        assert (error.status, error.type, error.retryable) == (429, "rate_limit_error", True)
        assert error.retry_after_s == expected_s


async def test_a_bad_request_is_relayed_as_a_non_retryable_400(
    upstream: ScriptedServer, provider: GeminiProvider
) -> None:
    body = {"error": {"code": 400, "message": "Invalid JSON payload", "status": "INVALID_ARGUMENT"}}
    upstream.reply(Reply(400, orjson.dumps(body)))
    with pytest.raises(UpstreamStatusError) as caught:
        await provider.send(chat(), DEADLINES)
    assert (caught.value.status, caught.value.retryable) == (400, False)
    relayed = orjson.loads(caught.value.upstream_body)["error"]
    assert (relayed["message"], relayed["code"]) == ("Invalid JSON payload", "invalid_argument")


async def test_refused_credentials_never_leak_the_key(
    upstream: ScriptedServer, provider: GeminiProvider
) -> None:
    body = {
        "error": {"code": 403, "message": f"Key {KEY} is blocked", "status": "PERMISSION_DENIED"}
    }
    upstream.reply(Reply(403, orjson.dumps(body)))
    with pytest.raises(UpstreamStatusError) as caught:
        await provider.send(chat(), DEADLINES)
    error = caught.value
    assert isinstance(error, UpstreamCredentialsRefused)
    assert (error.status, error.retryable) == (502, True)
    for text in (
        error.message,
        str(error),
        repr(error),
        error.upstream_body.decode(),
        repr(provider),
    ):
        assert KEY not in text


async def test_untranslatable_requests_never_reach_the_backend(
    upstream: ScriptedServer, provider: GeminiProvider
) -> None:
    with pytest.raises(UnsupportedRequest) as caught:
        await provider.send(chat(n=3), DEADLINES)
    assert (caught.value.status, caught.value.retryable, caught.value.param) == (400, False, "n")
    embeddings = UpstreamRequest("/embeddings", b'{"model": "m", "input": "x"}', stream=False)
    with pytest.raises(UnsupportedRequest, match="/chat/completions"):
        await provider.send(embeddings, DEADLINES)
    assert upstream.seen == []


async def test_health_asks_for_the_first_model_with_the_key(
    upstream: ScriptedServer, provider: GeminiProvider
) -> None:
    upstream.reply(Reply(body=b'{"name": "models/gemini-2.5-flash"}'), Reply(403, b"{}"))
    healthy = await provider.health(timeout_s=2.0)
    refused = await provider.health(timeout_s=2.0)
    assert healthy.healthy, healthy.reason
    assert not refused.healthy and "credentials" in refused.reason
    seen = upstream.seen[0]
    assert (seen.method, seen.path) == ("GET", f"/v1beta/models/{MODEL}")
    assert_keyed(seen.headers, seen.query)


async def test_health_is_bounded_by_its_timeout(
    upstream: ScriptedServer, provider: GeminiProvider
) -> None:
    upstream.reply(Reply(body=b"{}", delay_s=1.0))
    result = await provider.health(timeout_s=0.1)
    assert not result.healthy
    assert "timed out" in result.reason


async def test_without_models_health_lists_them(upstream: ScriptedServer) -> None:
    provider = GeminiProvider("gem", upstream.url + "/v1beta", KEY)
    upstream.reply(Reply(body=b'{"models": []}'))
    try:
        assert (await provider.health(timeout_s=2.0)).healthy
    finally:
        await provider.close()
    assert upstream.seen[0].path == "/v1beta/models"


async def test_the_default_base_url_is_googles() -> None:
    provider = await open_provider(ProviderSettings(name="g", kind="gemini", api_key=KEY))
    try:
        assert provider.base_url == DEFAULT_BASE_URL
    finally:
        await provider.close()

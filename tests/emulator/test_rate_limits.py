"""Rate limits: the token buckets, and OpenAI's x-ratelimit-* headers and 429s on the wire."""

from __future__ import annotations

import httpx
import pytest

from emulator.rate_limits import Budget, RateLimiter
from emulator.wire.openai_format import duration_text
from tests.emulator.conftest import StartEmulator, chat_request


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_no_limits_admit_everything_and_report_nothing() -> None:
    limiter = RateLimiter(None, None)
    state = limiter.admit(10**9)
    assert not state.refused and state.requests is None and state.tokens is None


def test_requests_refill_continuously() -> None:
    clock = FakeClock()
    limiter = RateLimiter(60, None, clock)  # one request per second
    for remaining in range(59, -1, -1):
        state = limiter.admit(0)
        assert state.requests == Budget(60, remaining, pytest.approx(60 - remaining))
    refused = limiter.admit(0)
    assert refused.refused and refused.retry_after_s == pytest.approx(1.0)
    clock.now += 0.5
    assert limiter.admit(0).retry_after_s == pytest.approx(0.5)
    clock.now += 0.5
    assert not limiter.admit(0).refused


def test_tokens_count_and_a_refusal_takes_nothing() -> None:
    clock = FakeClock()
    limiter = RateLimiter(None, 600, clock)  # ten tokens per second
    assert limiter.admit(500).tokens == Budget(600, 100, pytest.approx(50.0))
    refused = limiter.admit(150)
    assert refused.retry_after_s == pytest.approx(5.0)
    assert refused.tokens is not None and refused.tokens.remaining == 100
    assert not limiter.admit(100).refused


def test_a_request_larger_than_a_minute_waits_for_a_full_bucket() -> None:
    clock = FakeClock()
    limiter = RateLimiter(None, 600, clock)
    assert not limiter.admit(5000).refused  # a full bucket lets it through
    assert limiter.admit(5000).retry_after_s == pytest.approx(60.0)
    assert limiter.peek().tokens == Budget(600, 0, pytest.approx(60.0))


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.0, "0ms"), (0.1234, "124ms"), (1.5, "1.5s"), (125.0, "2m5s")]
)
def test_reset_durations_read_like_openais(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


async def test_openai_paths_send_rate_headers_and_429(start_emulator: StartEmulator) -> None:
    server = await start_emulator(
        rate_limit_requests_per_minute=2, rate_limit_tokens_per_minute=100
    )
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        first = await http.post("/chat/completions", json=chat_request(max_tokens=10))
        assert first.status_code == 200
        headers = first.headers
        assert headers["x-ratelimit-limit-requests"] == "2"
        assert headers["x-ratelimit-remaining-requests"] == "1"
        assert headers["x-ratelimit-limit-tokens"] == "100"
        assert headers["x-ratelimit-remaining-tokens"] == "89"  # 1 prompt + 10 max tokens
        assert headers["x-ratelimit-reset-requests"].endswith("s")
        too_many_tokens = await http.post("/chat/completions", json=chat_request(max_tokens=95))
        assert too_many_tokens.status_code == 429
        error = too_many_tokens.json()["error"]
        assert (error["type"], error["code"]) == ("requests", "rate_limit_exceeded")
        assert "tokens" in error["message"]
        assert float(too_many_tokens.headers["retry-after"]) > 0
        embeddings = await http.post("/embeddings", json={"model": "emulated-model", "input": "x"})
        assert embeddings.headers["x-ratelimit-remaining-requests"] == "0"
        limited = await http.post("/completions", json={"model": "emulated-model", "prompt": "x"})
    assert limited.status_code == 429
    assert limited.headers["x-ratelimit-remaining-requests"] == "0"
    assert "requests" in limited.json()["error"]["message"]


async def test_no_rate_headers_without_limits(client: httpx.AsyncClient) -> None:
    response = await client.post("/chat/completions", json=chat_request())
    assert not [name for name in response.headers if name.startswith("x-ratelimit")]


async def test_openai_paths_check_the_bearer_key(start_emulator: StartEmulator) -> None:
    server = await start_emulator(api_key="secret")
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        refused = await http.post("/chat/completions", json=chat_request())
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "invalid_api_key"
        assert (await http.get("/models")).status_code == 401
        http.headers["authorization"] = "Bearer secret"
        assert (await http.post("/chat/completions", json=chat_request())).status_code == 200
        assert (await http.get("/models")).status_code == 200
        assert (await http.get(http.base_url.join("/health"))).status_code == 200

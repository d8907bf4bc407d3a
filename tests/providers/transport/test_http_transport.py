"""The HTTP layer under the adapters: error statuses, Retry-After, stalls, transport failures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import cast

import aiohttp
import pytest

from providers.base import Deadlines, upstream_headers
from providers.errors import (
    UpstreamCredentialsRefused,
    UpstreamError,
    UpstreamNotFound,
    UpstreamProtocolError,
    UpstreamResponseTooLarge,
    UpstreamStatusError,
    UpstreamTimeout,
)
from providers.rate_limits import RateLimitSignal
from providers.settings import HttpClient
from providers.transport.http_transport import HttpTransport, retry_after_s
from tests.providers.fake_upstream import Pause, Reply, ScriptedServer

KEY = "sk-transport-secret"
DEADLINES = Deadlines(connect_s=2.0, first_byte_s=5.0, between_chunks_s=5.0)


class RecordingMapper:
    """A status-error hook that records what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, bytes, float | None]] = []

    def __call__(self, status: int, body: bytes, retry_after: float | None) -> UpstreamError:
        self.calls.append((status, body, retry_after))
        return UpstreamStatusError("mapped", backend="b", upstream_status=status)


@pytest.fixture(params=["lean", "aiohttp"])
def client(request: pytest.FixtureRequest) -> HttpClient:
    """Every exchange here runs through both clients a backend can use."""
    return cast(HttpClient, request.param)


@pytest.fixture
async def transport(client: HttpClient) -> AsyncIterator[HttpTransport]:
    opened = HttpTransport(
        "b", upstream_headers(KEY), RecordingMapper(), secret=KEY, http_client=client
    )
    try:
        yield opened
    finally:
        await opened.close()


async def test_the_hook_gets_the_scrubbed_body_and_retry_after(
    upstream: ScriptedServer, client: HttpClient
) -> None:
    upstream.reply(Reply(429, f'{{"error": "slow down, {KEY}"}}'.encode(), {"retry-after": "7"}))
    mapper = RecordingMapper()
    transport = HttpTransport("b", upstream_headers(KEY), mapper, secret=KEY, http_client=client)
    try:
        with pytest.raises(UpstreamStatusError, match="mapped"):
            await transport.send(upstream.url + "/v1/x", b"{}", DEADLINES)
    finally:
        await transport.close()
    assert mapper.calls == [(429, b'{"error": "slow down, [redacted]"}', 7.0)]


async def test_a_status_error_carries_the_rate_limit_headers(
    upstream: ScriptedServer, client: HttpClient
) -> None:
    headers = {"retry-after-ms": "250", "x-ratelimit-remaining-tokens": "0"}
    upstream.reply(Reply(429, b"{}", headers), Reply(429, b"{}", headers))
    own = RateLimitSignal(remaining_requests=1)

    def keeping_its_own(status: int, body: bytes, retry_after: float | None) -> UpstreamError:
        return UpstreamStatusError("own", backend="b", upstream_status=status, rate_limit=own)

    for mapper in (RecordingMapper(), keeping_its_own):
        transport = HttpTransport(
            "b", upstream_headers(KEY), mapper, secret=KEY, http_client=client
        )
        try:
            with pytest.raises(UpstreamStatusError) as caught:
                await transport.send(upstream.url + "/v1/x", b"{}", DEADLINES)
        finally:
            await transport.close()
        if isinstance(mapper, RecordingMapper):
            assert mapper.calls[0][2] == 0.25, "the hook gets the finer Retry-After"
            assert caught.value.rate_limit == RateLimitSignal(
                remaining_tokens=0, retry_after_s=0.25
            )
        else:
            assert caught.value.rate_limit is own, "what the mapping set is kept"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_a_404_names_the_path_asked_and_the_providers_base_url(
    upstream: ScriptedServer, client: HttpClient, stream: bool
) -> None:
    upstream.reply(Reply(404, b"Not Found", {"retry-after": "3"}))
    official = "https://api.example.com/v1"
    transport = HttpTransport(
        "b",
        upstream_headers(KEY),
        RecordingMapper(),
        secret=KEY,
        http_client=client,
        provider_url=official,
    )
    url = upstream.url + f"/{KEY}/messages?key={KEY}"  # the message: no query, no key
    try:
        with pytest.raises(UpstreamNotFound) as caught:
            if stream:
                await transport.open_stream(url, b"{}", DEADLINES)
            else:
                await transport.send(url, b"{}", DEADLINES)
    finally:
        await transport.close()
    assert caught.value.message == (
        "backend 'b' answered HTTP 404 for POST /[redacted]/messages: is its base_url right? "
        f"Its provider's is {official}"
    )
    assert caught.value.status == 404
    assert caught.value.rate_limit == RateLimitSignal(retry_after_s=3.0), "headers kept"


async def test_a_404_the_adapter_mapped_its_own_way_is_kept(
    upstream: ScriptedServer, client: HttpClient
) -> None:
    upstream.reply(Reply(404, b"{}"))

    def refused(status: int, body: bytes, retry_after: float | None) -> UpstreamError:
        return UpstreamCredentialsRefused(backend="b", upstream_status=status)

    transport = HttpTransport("b", upstream_headers(KEY), refused, secret=KEY, http_client=client)
    try:
        with pytest.raises(UpstreamCredentialsRefused):
            await transport.send(upstream.url + "/v1/x", b"{}", DEADLINES)
    finally:
        await transport.close()


@pytest.mark.parametrize(("error_from_status", "is_error"), [(400, False), (300, True)])
async def test_where_errors_start(
    upstream: ScriptedServer, client: HttpClient, error_from_status: int, is_error: bool
) -> None:
    upstream.reply(Reply(307, b"", {"location": "/elsewhere"}))
    mapper = RecordingMapper()
    transport = HttpTransport(
        "b",
        upstream_headers(KEY),
        mapper,
        secret=KEY,
        error_from_status=error_from_status,
        http_client=client,
    )
    try:
        if is_error:
            with pytest.raises(UpstreamStatusError):
                await transport.send(upstream.url + "/v1/x", b"{}", DEADLINES)
        else:
            assert (await transport.send(upstream.url + "/v1/x", b"{}", DEADLINES)).status == 307
    finally:
        await transport.close()
    assert [status for status, _, _ in mapper.calls] == ([307] if is_error else [])
    assert len(upstream.seen) == 1, "a redirect is never followed"


async def test_a_stall_mid_stream_times_out(
    upstream: ScriptedServer, transport: HttpTransport
) -> None:
    upstream.reply(Reply(body=[b"data: 1\n\n", Pause(1.0), b"data: 2\n\n"]))
    tight = Deadlines(connect_s=2.0, first_byte_s=5.0, between_chunks_s=0.2)
    stream = await transport.open_stream(upstream.url + "/v1/x", b"{}", tight)
    assert stream.first_chunk == b"data: 1\n\n"
    with pytest.raises(UpstreamTimeout, match=r"stalled for 0\.2s"):
        _ = [chunk async for chunk in stream.rest()]
    await stream.aclose()


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (TimeoutError(), UpstreamTimeout),
        (aiohttp.ServerTimeoutError(), UpstreamTimeout),
        (aiohttp.ServerDisconnectedError(), UpstreamProtocolError),
        (ConnectionResetError(), UpstreamProtocolError),
    ],
)
async def test_transport_failures(
    transport: HttpTransport, raised: Exception, expected: type[UpstreamError]
) -> None:
    """Refused connections are exercised for real in the adapters' tests."""
    with pytest.raises(expected) as caught, transport.map_upstream_errors():
        raise raised
    assert caught.value.retryable
    assert caught.value.backend == "b"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("", None), ("3", 3.0), ("-2", 0.0), ("soon", None), ("inf", None)],
)
def test_retry_after_values(value: str | None, expected: float | None) -> None:
    assert retry_after_s(value) == expected


def test_retry_after_as_an_http_date() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = retry_after_s(later)
    assert seconds is not None and 25 < seconds <= 30


def _capped(max_bytes: int) -> Deadlines:
    return Deadlines(
        connect_s=2.0,
        first_byte_s=5.0,
        between_chunks_s=5.0,
        max_body_bytes=max_bytes,
        max_stream_bytes=max_bytes,
    )


@pytest.mark.parametrize(
    ("body", "fits"),
    [
        (b"x" * 1000, True),
        (b"x" * 1001, False),  # its Content-Length says so before it is read
        ([b"x" * 500, b"x" * 500], True),
        ([b"x" * 600, b"x" * 600], False),  # chunked: counted as it comes
    ],
)
async def test_a_whole_answer_is_read_within_its_cap(
    upstream: ScriptedServer, transport: HttpTransport, body: bytes | list[bytes], fits: bool
) -> None:
    upstream.reply(Reply(body=body))
    if fits:
        answer = await transport.send(upstream.url + "/v1/x", b"{}", _capped(1000))
        assert len(answer.body) == 1000
        return
    with pytest.raises(UpstreamResponseTooLarge, match="passed the limit of 1000 bytes") as caught:
        await transport.send(upstream.url + "/v1/x", b"{}", _capped(1000))
    assert not caught.value.retryable and caught.value.status == 502


async def test_a_stream_ends_in_an_error_at_its_cap(
    upstream: ScriptedServer, transport: HttpTransport
) -> None:
    upstream.reply(Reply(body=[b"data: 1\n\n", Pause(0.05), b"x" * 600, Pause(0.05), b"y" * 600]))
    stream = await transport.open_stream(upstream.url + "/v1/x", b"{}", _capped(1000))
    relayed: list[bytes] = []
    with pytest.raises(UpstreamResponseTooLarge, match="stream passed the limit of 1000"):
        async for chunk in stream.rest():
            relayed.append(chunk)
    await stream.aclose()
    assert b"".join(relayed) == b"x" * 600, "nothing past the cap is relayed"


async def test_a_backends_cookie_is_not_sent_back(
    upstream: ScriptedServer, transport: HttpTransport
) -> None:
    """The transport serves every client: a Set-Cookie from one answer must not ride along
    on the requests that follow (another tenant's, say). By a host name: a cookie jar
    keeps none from an IP address."""
    cookie = {"set-cookie": "session=tenant-a; Path=/"}
    upstream.reply(Reply(200, b'{"ok": 1}', cookie), Reply(200, b'{"ok": 2}'))
    url = upstream.url.replace("127.0.0.1", "localhost") + "/v1/x"
    for _ in range(2):
        answer = await transport.send(url, b"{}", DEADLINES)
        assert answer.status == 200
    assert [seen.headers.get("cookie") for seen in upstream.seen] == [None, None]

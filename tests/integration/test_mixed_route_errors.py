"""Issue 14's failures on the mixed-format route, as each client's SDK raises them: an
unknown model, a bad client key, and a cloud backend that refuses the gateway's key (the
request fails over to the other cloud when its tags allow one, and is a 502 otherwise;
the health probes find the refusal too and keep requests away from it)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import anthropic
import openai
import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually
from tests.integration.mixed_fleet import (
    CLAUDE,
    CLIENT_KEY,
    CLOUD,
    GEMINI,
    HEADER,
    LOCAL,
    ROUTE,
    Member,
    start_fleet,
    with_client_keys,
)

QUESTION = "What is the weather in Oslo?"
Headers = Mapping[str, str]
"""An answer's headers (each SDK has its own httpx, so its own `Headers` class)."""
WRONG_BACKEND_KEY = "ak-revoked-0123456789"


@dataclass(frozen=True)
class Clients:
    oai: openai.AsyncOpenAI
    claude: anthropic.AsyncAnthropic


async def openai_chat(c: Clients, model: str, headers: dict[str, str], stream: bool) -> Headers:
    raw = await c.oai.chat.completions.with_raw_response.create(
        model=model,
        messages=[{"role": "user", "content": QUESTION}],
        max_tokens=4,
        stream=stream,
        extra_headers=headers,
    )
    parsed = raw.parse()
    if isinstance(parsed, openai.AsyncStream):
        assert [chunk async for chunk in parsed]
    else:
        assert parsed.choices[0].message.content
    return raw.headers


async def openai_responses(
    c: Clients, model: str, headers: dict[str, str], stream: bool
) -> Headers:
    raw = await c.oai.responses.with_raw_response.create(
        model=model, input=QUESTION, max_output_tokens=16, stream=stream, extra_headers=headers
    )
    parsed = raw.parse()
    if isinstance(parsed, openai.AsyncStream):
        events = [event async for event in parsed]
        assert events[-1].type in {"response.completed", "response.incomplete"}
    else:
        assert parsed.output_text
    return raw.headers


async def anthropic_messages(
    c: Clients, model: str, headers: dict[str, str], stream: bool
) -> Headers:
    raw = await c.claude.messages.with_raw_response.create(
        model=model,
        max_tokens=4,
        messages=[{"role": "user", "content": QUESTION}],
        stream=stream,
        extra_headers=headers,
    )
    parsed = await raw.parse()
    if isinstance(parsed, anthropic.AsyncStream):
        assert [event.type async for event in parsed][-1] == "message_stop"
    else:
        assert parsed.content
    return raw.headers


Call = Callable[[Clients, str, dict[str, str], bool], Awaitable[Headers]]


@dataclass(frozen=True)
class ClientFormat:
    """One client API as its SDK sees it, and the exceptions that SDK raises."""

    call: Call
    stream: bool
    not_found: type[Exception]
    unauthenticated: type[Exception]
    server_error: type[Exception]


OPENAI_ERRORS = (openai.NotFoundError, openai.AuthenticationError, openai.InternalServerError)
ANTHROPIC_ERRORS = (
    anthropic.NotFoundError,
    anthropic.AuthenticationError,
    anthropic.InternalServerError,
)
FORMATS = {
    f"{call.__name__}-{'stream' if stream else 'whole'}": ClientFormat(call, stream, *errors)
    for call, errors in (
        (openai_chat, OPENAI_ERRORS),
        (openai_responses, OPENAI_ERRORS),
        (anthropic_messages, ANTHROPIC_ERRORS),
    )
    for stream in (False, True)
}
EACH_FORMAT = pytest.mark.parametrize("fmt", list(FORMATS.values()), ids=list(FORMATS))


@pytest.fixture
async def clients_for() -> AsyncIterator[Callable[[RunningGateway, str], Clients]]:
    """Both SDKs pointed at a gateway with a given client key; closed after."""
    opened: list[Clients] = []

    def open_clients(gw: RunningGateway, key: str) -> Clients:
        clients = Clients(
            openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key=key, max_retries=0),
            anthropic.AsyncAnthropic(base_url=gw.url, api_key=key, max_retries=0),
        )
        opened.append(clients)
        return clients

    yield open_clients
    for clients in opened:
        await clients.oai.close()
        await clients.claude.close()


async def decision_of(gw: RunningGateway, headers: Headers) -> dict[str, Any]:
    found = await gw.client.get(f"/v1/switchyard/decisions/{headers['x-switchyard-decision']}")
    decision: dict[str, Any] = found.json()
    return decision


@EACH_FORMAT
async def test_an_unknown_model_is_not_found(
    fmt: ClientFormat,
    gw: RunningGateway,
    clients_for: Callable[[RunningGateway, str], Clients],
) -> None:
    clients = clients_for(gw, "unused")
    # The upstream ids behind the route are not public names either.
    for model in ("no-such-route", CLAUDE.model):
        with pytest.raises(fmt.not_found) as raised:
            await fmt.call(clients, model, {}, fmt.stream)
        assert getattr(raised.value, "status_code", None) == 404
    await fmt.call(clients, ROUTE, {}, fmt.stream)


@EACH_FORMAT
async def test_a_bad_client_key_is_refused(
    fmt: ClientFormat,
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
    clients_for: Callable[[RunningGateway, str], Clients],
) -> None:
    fleet = await start_fleet(start_emulator, monkeypatch)
    gw = await start_gateway(with_client_keys(fleet.config, monkeypatch))
    with pytest.raises(fmt.unauthenticated) as raised:
        await fmt.call(clients_for(gw, "not-a-client-key"), ROUTE, {}, fmt.stream)
    assert getattr(raised.value, "status_code", None) == 401
    assert all(engine.runtime.stats.received == 0 for engine in fleet.engines.values())
    headers = await fmt.call(clients_for(gw, CLIENT_KEY), ROUTE, {}, fmt.stream)
    assert headers["x-switchyard-backend"]


@dataclass(frozen=True)
class Revoked:
    """A gateway over the mixed route holding a key one cloud's engine refuses."""

    gw: RunningGateway
    refused: Member
    other: Member


@pytest.fixture(params=[(CLAUDE, GEMINI), (GEMINI, CLAUDE)], ids=["claude", "gemini"])
async def revoked(
    request: pytest.FixtureRequest,
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
) -> Revoked:
    refused, other = request.param
    keys = {refused.name: WRONG_BACKEND_KEY}
    fleet = await start_fleet(start_emulator, monkeypatch, gateway_keys=keys)
    return Revoked(await start_gateway(fleet.config), refused, other)


class HttpAnswer(Protocol):
    """The HTTP response an SDK's status error carries (each SDK has its own httpx)."""

    @property
    def status_code(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def headers(self) -> Headers: ...
    def json(self) -> Any: ...


def status_error(exc: BaseException) -> HttpAnswer:
    assert isinstance(exc, openai.APIStatusError | anthropic.APIStatusError)
    return exc.response


@EACH_FORMAT
async def test_a_refused_backend_key_fails_over_to_the_other_cloud(
    fmt: ClientFormat,
    revoked: Revoked,
    clients_for: Callable[[RunningGateway, str], Clients],
) -> None:
    refused, other = revoked.refused, revoked.other
    clients = clients_for(revoked.gw, "unused")
    attempts = []
    for _ in range(2):  # round-robin: one of the two tries the refused backend first
        headers = await fmt.call(clients, ROUTE, {HEADER: CLOUD}, fmt.stream)
        assert headers["x-switchyard-backend"] == other.name
        decision = await decision_of(revoked.gw, headers)
        assert decision["served_model"] == other.model
        attempts.append([(a["backend"], a["model"], a["outcome"]) for a in decision["attempts"]])
    assert [
        (refused.name, refused.model, "upstream_credentials_refused"),
        (other.name, other.model, "ok"),
    ] in attempts
    assert [(other.name, other.model, "ok")] in attempts


@EACH_FORMAT
async def test_a_refused_backend_key_with_nowhere_else_allowed_is_a_bad_gateway(
    fmt: ClientFormat,
    revoked: Revoked,
    clients_for: Callable[[RunningGateway, str], Clients],
) -> None:
    clients = clients_for(revoked.gw, "unused")
    with pytest.raises(fmt.server_error) as raised:
        await fmt.call(clients, ROUTE, {HEADER: revoked.refused.tag}, fmt.stream)
    response = status_error(raised.value)
    assert response.status_code == 502
    assert WRONG_BACKEND_KEY not in response.text
    body = response.json()
    if isinstance(raised.value, openai.APIStatusError):
        assert body["error"]["code"] == "upstream_credentials_refused"
    else:
        assert body["type"] == "error" and body["error"]["type"] == "api_error"
    decision = await decision_of(revoked.gw, response.headers)
    assert decision["status"] == 502 and decision["served_by"] is None
    assert [a["outcome"] for a in decision["attempts"]] == ["upstream_credentials_refused"]


async def test_probes_find_the_refused_key_and_routing_avoids_it(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
    clients_for: Callable[[RunningGateway, str], Clients],
) -> None:
    keys = {CLAUDE.name: WRONG_BACKEND_KEY}
    probing = {"active_probes": True, "probe_interval_s": 0.05}
    fleet = await start_fleet(start_emulator, monkeypatch, gateway_keys=keys, health=probing)
    gw = await start_gateway(fleet.config)

    async def health() -> dict[str, tuple[bool, str]]:
        listed = (await gw.client.get("/v1/switchyard/backends")).json()["backends"]
        return {b["name"]: (b["healthy"], b["health_reason"]) for b in listed}

    async def probed() -> bool:
        return (await health())[CLAUDE.name][0] is False

    await eventually(probed, "claude's probe sees its key refused")
    assert await health() == {
        LOCAL.name: (True, "healthy"),
        CLAUDE.name: (False, "probe: credentials refused (HTTP 401)"),
        GEMINI.name: (True, "healthy"),
    }
    clients = clients_for(gw, "unused")
    headers = await openai_chat(clients, ROUTE, {HEADER: CLOUD}, False)
    decision = await decision_of(gw, headers)
    assert [a["backend"] for a in decision["attempts"]] == [GEMINI.name], "never tried"
    dropped = {c["backend"]: c["dropped_by"] for c in decision["candidates"]}
    assert dropped == {CLAUDE.name: "healthy-filter", GEMINI.name: None}
    # With claude alone allowed, the healthy-filter's panic mode tries it all the same.
    with pytest.raises(anthropic.InternalServerError) as raised:
        await anthropic_messages(clients, ROUTE, {HEADER: CLAUDE.tag}, False)
    response = status_error(raised.value)
    assert response.status_code == 502
    [candidate] = (await decision_of(gw, response.headers))["candidates"]
    assert candidate["verdicts"]["healthy-filter"]["reason"].startswith("panic: all 1")

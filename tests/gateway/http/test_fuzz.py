"""Fuzzing the proxy's request schemas against a running gateway: zero 5xx, zero hangs.

Bodies come from each ingress's request schema (its pydantic model's JSON schema, through
hypothesis-jsonschema): valid ones, valid ones with one field replaced by any JSON value,
any JSON value, and any bytes; `model` is often the route's name so that requests reach a
backend (an emulated engine). `/v1/models/{id}` gets any id. Every request has a timeout.

Fast by default (`EXAMPLES`: 10 to 60 per endpoint, fewer where hypothesis-jsonschema is
slow to draw from the schema, as for Anthropic's; derandomised, so CI replays the same
examples, about 40 s in all); a longer, random run on demand, N examples per endpoint:

    SWITCHYARD_FUZZ_EXAMPLES=5000 .venv/bin/python -m pytest tests/gateway/http/test_fuzz.py
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from pydantic import BaseModel

from emulator.loopback import LoopbackServer
from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings
from gateway.config.root import parse_config
from gateway.http.anthropic_ingress.messages_request import MessagesRequest
from gateway.http.app import create_app
from gateway.http.responses_ingress.responses_request import ResponsesRequest
from gateway.http.wire import ChatHead, CompletionHead, EmbeddingHead
from tests.conftest import make_config

EXAMPLES = {
    "/v1/chat/completions": 60,
    "/v1/completions": 60,
    "/v1/embeddings": 60,
    "/v1/messages": 20,
    "/v1/messages/count_tokens": 10,
    "/v1/responses": 30,
    "/v1/models/{id}": 60,
}
LONG_RUN = os.environ.get("SWITCHYARD_FUZZ_EXAMPLES")
pytestmark = pytest.mark.timeout(3600 if LONG_RUN else 120)
REQUEST_TIMEOUT_S = 10.0
"""A request that takes longer is a hang: the emulator answers in milliseconds."""

BOUNDS = {"max_output_tokens": 64, "max_messages": 64, "max_tools": 16}
"""Small budgets, so that valid requests cost the emulator little."""


def fuzzing(path: str) -> settings:
    return settings(
        max_examples=int(LONG_RUN) if LONG_RUN else EXAMPLES[path],
        deadline=None,
        derandomize=not LONG_RUN,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


class RunningFleet:
    """An emulator and the gateway over it, served from their own thread and loop, so that
    hypothesis's synchronous tests can call them."""

    def __init__(self) -> None:
        self.url = ""
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._run(),))

    def __enter__(self) -> RunningFleet:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the fuzzed gateway did not start")
        return self

    def __exit__(self, *_: object) -> None:
        stop = self._stop
        assert stop is not None
        self._loop.call_soon_threadsafe(stop.set)
        self._thread.join(30)
        self._loop.close()

    async def _run(self) -> None:
        self._stop = asyncio.Event()
        engine = EmulatorServer(EmulatorSettings(token_delay_ms=0.0), host="127.0.0.1", port=0)
        await engine.start()
        config = make_config({"only": engine.base_url}, bounds=BOUNDS)
        config["timeouts"] = {"total_s": 8.0}
        app = create_app(parse_config(config))
        server = LoopbackServer(app, lifespan="on")
        await server.start()
        self.url = server.url
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await server.stop()
            await engine.stop()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with (
        RunningFleet() as fleet,
        httpx.Client(base_url=fleet.url, timeout=REQUEST_TIMEOUT_S) as http,
    ):
        yield http


def _schema_bodies(model: type[BaseModel]) -> st.SearchStrategy[Any]:
    valid = from_schema(model.model_json_schema())
    routed = st.tuples(valid, st.booleans()).map(
        lambda pair: {**pair[0], "model": "default"} if pair[1] else pair[0]
    )
    return st.one_of(routed, routed.flatmap(_one_field_replaced), JSON)


def _one_field_replaced(body: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    if not body:
        return st.just(body)
    return st.tuples(st.sampled_from(sorted(body)), JSON).map(
        lambda pair: {**body, pair[0]: pair[1]}
    )


def _encoded(bodies: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    def encode(value: Any) -> bytes:
        try:
            return orjson.dumps(value)
        except TypeError:  # a float orjson cannot write (nan, inf): send it as JSON would
            return repr(value).encode()

    return st.one_of(bodies.map(encode), st.binary(max_size=200))


PATHS: dict[str, type[BaseModel]] = {
    "/v1/chat/completions": ChatHead,
    "/v1/completions": CompletionHead,
    "/v1/embeddings": EmbeddingHead,
    "/v1/messages": MessagesRequest,
    "/v1/messages/count_tokens": MessagesRequest,
    "/v1/responses": ResponsesRequest,
}


def _post(client: httpx.Client, path: str, body: bytes) -> httpx.Response:
    with client.stream("POST", path, content=body) as response:
        response.read()  # a stream must end too, within the timeout
    return response


@pytest.mark.parametrize("path", list(PATHS))
def test_no_body_gets_a_5xx_or_hangs(client: httpx.Client, path: str) -> None:
    @fuzzing(path)
    @given(body=_encoded(_schema_bodies(PATHS[path])))
    def fuzz(body: bytes) -> None:
        response = _post(client, path, body)
        assert response.status_code < 500, (body[:500], response.text[:500])
        assert response.status_code != 200 or response.content, body[:500]

    fuzz()


def test_no_model_id_gets_a_5xx_or_hangs(client: httpx.Client) -> None:
    @fuzzing("/v1/models/{id}")
    @given(model_id=st.text(min_size=1, max_size=60))
    def fuzz(model_id: str) -> None:
        response = client.get(f"/v1/models/{quote(model_id, safe='/')}")
        assert response.status_code < 500, (model_id, response.text[:500])

    fuzz()
    assert client.get("/v1/models").status_code == 200

"""Polling llama-server's /slots and /props: config, addresses, what reaches the fleet's
views, failures and their logs, and the gateway end to end against a fake llama-server
that answers with a real one's bytes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.loopback import LoopbackServer
from gateway.config.backends import BackendConfig
from gateway.config.engine_polls import LlamaCppConfig
from gateway.config.root import HealthConfig, parse_config
from gateway.errors import ConfigError
from gateway.fleet.scrape.engine_metrics import EngineLoad
from gateway.fleet.scrape.llama_cpp_scrape import LlamaCppScraper, LlamaCppTarget, llama_cpp_targets
from gateway.fleet.scrape.llama_cpp_status import EngineSlots
from gateway.fleet.state import FleetState
from tests import llama_server_replies as replies
from tests.conftest import StartGateway, eventually, make_config

Answer = tuple[int, bytes, bool]
"""Status, body, and whether it hangs (until the server's `released` is set)."""
"""(status, body, delay_s) a fake path answers with."""


def backend(**fields: Any) -> BackendConfig:
    values = {"name": "a", "kind": "llama-cpp", "base_url": "http://10.0.0.7:8080/v1"}
    return BackendConfig.model_validate({**values, "models": ["m"], **fields})


# -- config


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({}, None),
        ({"llama_cpp": {"slots": False}}, None),
        ({"kind": "openai-compatible", "preset": "llama-cpp", "llama_cpp": {}}, None),
        (
            {"kind": "vllm", "llama_cpp": {}},
            "backends.0.llama_cpp: only for kind llama-cpp, not vllm",
        ),
        (
            {"llama_cpp": {"interval_s": 2, "stale_after_s": 3}},
            "backends.0.llama_cpp.stale_after_s: must be at least twice interval_s",
        ),
        (
            {"llama_cpp": {"timeout_s": 10}},
            "backends.0.llama_cpp.timeout_s: must not exceed stale_after_s",
        ),
        (
            {"llama_cpp": {"max_body_bytes": 10}},
            "backends.0.llama_cpp.max_body_bytes: Input should be greater than or equal to 1024",
        ),
        (
            {"llama_cpp": {"every_s": 1}},
            "backends.0.llama_cpp.every_s: Extra inputs are not permitted",
        ),
    ],
)
def test_llama_cpp_config(fields: dict[str, Any], problem: str | None) -> None:
    config = make_config({"a": "http://10.0.0.7:8080/v1"}, model="m")
    config["backends"][0].update({"kind": "llama-cpp", **fields})
    if problem is None:
        parse_config(config)
        return
    with pytest.raises(ConfigError) as caught:
        parse_config(config)
    assert caught.value.problems == [problem]


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({}, LlamaCppConfig()),
        ({"llama_cpp": {"props": False}}, LlamaCppConfig(props=False)),
        ({"kind": "openai-compatible", "preset": "llama-cpp"}, LlamaCppConfig()),
        ({"kind": "vllm"}, None),
        ({"kind": "openai-compatible"}, None),
    ],
)
def test_llama_cpp_reads_are_on_by_default_for_the_kind_only(
    fields: dict[str, Any], status: LlamaCppConfig | None
) -> None:
    assert backend(**fields).llama_cpp_status == status


def test_targets_sit_at_the_servers_origin() -> None:
    backends = [
        backend(name="a", base_url="http://10.0.0.7:8080/v1"),
        backend(name="b", base_url="https://gpu-3.internal/llama/v1/"),
        backend(name="off", llama_cpp={"slots": False, "props": False}),
        backend(name="other", kind="vllm"),
    ]
    urls = {"a": "http://10.0.0.7:8080/v1", "b": "https://gpu-3.internal/llama/v1/"}
    urls |= {"off": "http://h:1/v1", "other": "http://h:2/v1"}
    targets = llama_cpp_targets(backends, urls)
    assert [(t.backend, t.slots_url, t.props_url) for t in targets] == [
        ("a", "http://10.0.0.7:8080/slots", "http://10.0.0.7:8080/props"),
        ("b", "https://gpu-3.internal/slots", "https://gpu-3.internal/props"),
    ]


# -- what reaches the views


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_busy_slots_are_the_running_requests_until_stale() -> None:
    clock = Clock()
    config = backend(metrics={"stale_after_s": 5.0}, llama_cpp={"stale_after_s": 2.0})
    state = FleetState([config], HealthConfig(), clock=clock)
    state.record_engine_load("a", EngineLoad("llama.cpp", 0, 3, None))
    state.record_engine_slots("a", EngineSlots(total=4, busy=2, n_ctx=2048))
    view = state.views(["a"])["a"]
    assert (view.engine_running, view.engine_waiting) == (2, 3), "waiting from /metrics"
    clock.now += 2.5  # the slots reading is stale, the metrics one is not
    view = state.views(["a"])["a"]
    assert (view.engine_running, view.engine_waiting) == (0, 3)
    described = state.describe()[0]["engine_slots"]
    assert described == {
        "total": 4,
        "busy": 2,
        "n_ctx": 2048,
        "age_s": 2.5,
        "fresh": False,
        "polls": 1,
        "poll_failures": 0,
        "last_error": "",
    }


def test_a_request_ending_here_supersedes_the_slots_reading_until_the_next_poll() -> None:
    clock = Clock()
    config = backend(metrics={"stale_after_s": 5.0}, llama_cpp={"stale_after_s": 2.0})
    state = FleetState([config], HealthConfig(), clock=clock)
    state.record_engine_load("a", EngineLoad("llama.cpp", 1, 0, None))
    state.acquire("a")
    state.record_engine_slots("a", EngineSlots(total=1, busy=1, n_ctx=2048))
    assert state.views(["a"])["a"].engine_running == 1
    clock.now += 0.3
    state.release("a")
    # Both readings counted the request that just ended: neither says anything until the
    # next poll, so the replica that just served does not look busy.
    assert state.views(["a"])["a"].engine_running is None
    clock.now += 0.1
    state.record_engine_load("a", EngineLoad("llama.cpp", 0, 0, None))
    assert state.views(["a"])["a"].engine_running == 0
    clock.now += 0.5
    state.record_engine_slots("a", EngineSlots(total=1, busy=1, n_ctx=2048))
    assert state.views(["a"])["a"].engine_running == 1, "a poll after the release counts"
    assert state.describe()[0]["engine_slots"]["fresh"] is True


def test_the_learnt_window_is_used_unless_one_is_configured() -> None:
    learnt, configured = backend(name="learnt"), backend(name="set", context_window_tokens=4096)
    state = FleetState([learnt, configured], HealthConfig())
    assert state.views(["learnt"])["learnt"].context_window_tokens is None
    for name in ("learnt", "set"):
        state.learn_context_window(name, 2048)
    views = state.views(["learnt", "set"])
    assert views["learnt"].context_window_tokens == 2048
    assert views["set"].context_window_tokens == 4096
    rows = {row["name"]: row for row in state.describe()}
    assert (rows["learnt"]["context_window_tokens"], rows["learnt"]["context_window_source"]) == (
        2048,
        "engine",
    )
    assert (rows["set"]["context_window_tokens"], rows["set"]["context_window_source"]) == (
        4096,
        "config",
    )


# -- polling a fake llama-server on loopback


class FakeLlamaServer:
    """llama-server's status paths and chat, each answering what a test sets."""

    def __init__(self) -> None:
        self.answers: dict[str, Answer] = {
            "/health": (200, replies.HEALTH_OK, False),
            "/slots": (200, replies.SLOTS_IDLE, False),
            "/props": (200, replies.PROPS, False),
            "/v1/chat/completions": (200, replies.CHAT_WARM, False),
        }
        self.hits: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.released = asyncio.Event()
        routes = [Route(path, self.answer, methods=["GET", "POST"]) for path in self.answers]
        self.app = Starlette(routes=routes)

    def count(self, path: str) -> int:
        return self.hits.count(path)

    async def answer(self, request: Request) -> Response:
        path = request.url.path
        self.hits.append(path)
        self.headers.append(dict(request.headers))
        status, body, hangs = self.answers[path]
        if hangs:
            await self.released.wait()
        return Response(body, status, media_type="application/json")


@pytest.fixture
async def llama() -> AsyncIterator[tuple[FakeLlamaServer, str]]:
    server = FakeLlamaServer()
    loopback = LoopbackServer(server.app, lifespan="off")
    await loopback.start()
    yield server, loopback.url
    server.released.set()
    await loopback.stop()


Make = Callable[..., tuple[LlamaCppScraper, LlamaCppTarget]]


@pytest.fixture
async def scraper() -> AsyncIterator[Make]:
    made: list[LlamaCppScraper] = []

    def make(
        url: str, window: int | None = None, **fields: Any
    ) -> tuple[LlamaCppScraper, LlamaCppTarget]:
        values: dict[str, Any] = {"interval_s": 0.05, "timeout_s": 0.3, "stale_after_s": 1.0}
        config = LlamaCppConfig.model_validate({**values, **fields})
        target = LlamaCppTarget("a", url, config, window)
        state = FleetState(
            [backend(llama_cpp=values, context_window_tokens=window)], HealthConfig()
        )
        made.append(LlamaCppScraper([target], state))
        return made[-1], target

    yield make
    for each in made:
        await each.stop()


async def test_one_poll_reads_slots_then_props(
    llama: tuple[FakeLlamaServer, str], scraper: Make
) -> None:
    server, url = llama
    server.answers["/slots"] = (200, replies.SLOTS_BUSY, False)
    poller, target = scraper(url)
    await poller.poll_once(target)
    await poller.poll_once(target)
    assert server.hits == ["/slots", "/props", "/slots"], "props only until learnt"
    view = poller._state.views(["a"])["a"]
    assert (view.engine_running, view.context_window_tokens) == (1, 2048)
    assert poller.learnt_window("a") == 2048
    assert all("authorization" not in h for h in server.headers)
    assert server.headers[0]["accept"] == "application/json"


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ((503, replies.LOADING, False), "HTTP 503: not ready, loading its model"),
        (
            (501, replies.NO_SLOTS, False),
            "HTTP 501: start llama-server with --slots, or set llama_cpp.slots: false",
        ),
        ((302, b"", False), "HTTP 302"),  # redirects are not followed
        ((200, replies.HEALTH_OK, False), "no list of slots in the answer"),
        ((200, replies.SLOTS_IDLE, True), "no answer within 0.3s"),
        ((200, b"[" + b" " * 5000 + b"]", False), "body of 5,002 bytes is over 1,024"),
    ],
)
async def test_slots_failures_keep_no_reading(
    llama: tuple[FakeLlamaServer, str], scraper: Make, answer: Answer, error: str
) -> None:
    server, url = llama
    server.answers["/slots"] = answer
    poller, target = scraper(url, max_body_bytes=1024)
    assert await poller.read_slots(target) is None
    described = poller._state.describe()[0]["engine_slots"]
    assert (described["last_error"], described["poll_failures"]) == (error, 1)  # type: ignore[index]
    assert poller._state.views(["a"])["a"].engine_running is None


async def test_a_loading_server_is_read_once_it_has_loaded(
    llama: tuple[FakeLlamaServer, str], scraper: Make, caplog: pytest.LogCaptureFixture
) -> None:
    server, url = llama
    caplog.set_level(logging.DEBUG, logger="switchyard.llama_cpp")
    server.answers["/slots"] = server.answers["/props"] = (503, replies.LOADING, False)
    poller, target = scraper(url)
    for _ in range(3):
        await poller.poll_once(target)
    assert poller._state.views(["a"])["a"].context_window_tokens is None
    server.answers["/slots"] = (200, replies.SLOTS_IDLE, False)
    server.answers["/props"] = (200, replies.PROPS, False)
    await poller.poll_once(target)
    await poller.poll_once(target)
    assert server.count("/props") == 4, "until it answered, then no more"
    assert poller._state.views(["a"])["a"].context_window_tokens == 2048
    levels = [r.levelname for r in caplog.records]
    assert levels == ["WARNING", "WARNING", *["DEBUG"] * 4, "INFO", "INFO", "INFO"]
    learnt = caplog.records[-1].getMessage()
    assert learnt == (
        "llama.cpp: backend a reports a context window of 2,048 tokens per slot (/props); "
        "the context-window-filter uses it"
    )


async def test_props_are_read_again_when_slots_come_back(
    llama: tuple[FakeLlamaServer, str], scraper: Make, caplog: pytest.LogCaptureFixture
) -> None:
    server, url = llama
    poller, target = scraper(url, window=8192)
    await poller.poll_once(target)
    server.answers["/slots"] = (503, replies.LOADING, False)  # a restart
    await poller.poll_once(target)
    server.answers["/slots"] = (200, replies.SLOTS_IDLE, False)
    bigger = orjson.loads(replies.PROPS)
    bigger["default_generation_settings"]["n_ctx"] = 4096
    server.answers["/props"] = (200, orjson.dumps(bigger), False)
    caplog.set_level(logging.INFO, logger="switchyard.llama_cpp")
    await poller.poll_once(target)  # slots back: props due again
    await poller.poll_once(target)
    assert server.count("/props") == 2
    assert poller.learnt_window("a") == 4096
    assert poller._state.views(["a"])["a"].context_window_tokens == 8192, "configured wins"
    assert caplog.records[-1].getMessage() == (
        "llama.cpp: backend a reports a context window of 4,096 tokens per slot (/props); "
        "its configured context_window_tokens 8,192 is used"
    )


async def test_the_poller_runs_until_stopped(
    llama: tuple[FakeLlamaServer, str], scraper: Make
) -> None:
    # When it polls is poll_forever's (test_engine_scrape.py, on a fake clock).
    server, url = llama
    poller, _ = scraper(url)
    poller.start()

    async def polled_thrice() -> bool:
        return server.count("/slots") >= 3

    await eventually(polled_thrice, "three polls, one every 0.05 s")
    await poller.stop()
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "llama-cpp-status"], "stopped"


# -- the gateway end to end


async def test_the_learnt_window_filters_without_configuration(
    start_gateway: StartGateway,
) -> None:
    small, big = FakeLlamaServer(), FakeLlamaServer()
    tiny = orjson.loads(replies.PROPS)
    tiny["default_generation_settings"]["n_ctx"] = 64
    small.answers["/props"] = (200, orjson.dumps(tiny), False)
    servers = [LoopbackServer(s.app, lifespan="off") for s in (small, big)]
    for each in servers:
        await each.start()
    try:
        gw = await start_gateway(_two_llama_cpp_backends(servers[0].url, servers[1].url))
        await _until(lambda: gw.gateway.state.views(["small", "big"]), "windows learnt")
        body = {"model": "default", "messages": [{"role": "user", "content": "hi"}]}
        response = await gw.client.post("/v1/chat/completions", json={**body, "max_tokens": 100})
        decision_id = response.headers["x-switchyard-decision"]
        decision = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    finally:
        for each in servers:
            await each.stop()
    assert response.headers["x-switchyard-backend"] == "big"
    assert response.json()["usage"]["prompt_tokens_details"] == {"cached_tokens": 40}
    verdicts = {
        c["backend"]: c["verdicts"]["context-window-filter"] for c in decision["candidates"]
    }
    assert verdicts["small"]["keep"] is False
    assert verdicts["small"]["reason"].endswith("> window 64")
    assert verdicts["big"]["reason"].endswith("<= window 2,048")


def _two_llama_cpp_backends(small_url: str, big_url: str) -> dict[str, Any]:
    fast = {"interval_s": 0.05, "stale_after_s": 1.0}
    profile = [{"ref": "context-window-filter"}, {"ref": "max-score-picker"}]
    config = make_config({"small": small_url + "/v1", "big": big_url + "/v1"}, profile=profile)
    for entry in config["backends"]:
        entry.update({"kind": "llama-cpp", "llama_cpp": fast})
    return config


async def _until(views: Callable[[], dict[str, Any]], what: str) -> None:
    async def learnt() -> bool:
        return all(v.context_window_tokens is not None for v in views().values())

    await eventually(learnt, what)

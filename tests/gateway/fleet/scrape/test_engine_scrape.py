"""Scraping engines' /metrics: config, addresses, failures, staleness, and the real emulator."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from emulator.loopback import LoopbackServer
from gateway.config.backends import BackendConfig
from gateway.config.engine_polls import MetricsConfig
from gateway.config.root import HealthConfig, parse_config
from gateway.errors import ConfigError
from gateway.fleet.scrape.engine_metrics import EngineLoad
from gateway.fleet.scrape.engine_scrape import (
    EngineScraper,
    ScrapeTarget,
    metrics_url,
    scrape_targets,
)
from gateway.fleet.state import FleetState
from tests.conftest import StartEmulator, StartGateway, eventually, make_config
from tests.gateway.processes import free_port

VLLM_TEXT = 'vllm:num_requests_running{model_name="m"} 5\nvllm:num_requests_waiting 2\n'


def backend(**fields: Any) -> BackendConfig:
    fields.setdefault("base_url", "http://10.0.0.11:8000/v1")
    return BackendConfig.model_validate({"name": "a", "kind": "vllm", "models": ["m"], **fields})


# -- config


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"metrics": {}}, None),
        ({"metrics": {"enabled": False}, "kind": "openai"}, None),
        ({"metrics": {"url": "https://stats.internal/metrics"}, "kind": "openai"}, None),
        ({"metrics": {"path": "/engine/metrics"}, "kind": "openai-compatible"}, None),
        ({"metrics": {}, "kind": "llama-cpp"}, None),
        (
            {"metrics": {}, "kind": "openai"},
            "backends.0.metrics: kind openai has no known metrics endpoint; "
            "set metrics.url or metrics.path",
        ),
        (
            {"metrics": {}, "kind": "ollama"},
            "backends.0.metrics: kind ollama has no known metrics endpoint; "
            "set metrics.url or metrics.path",
        ),
        (
            {"metrics": {"url": "http://127.0.0.1:1/metrics"}, "kind": "emulated"},
            "backends.0.metrics.url: an emulated backend is started on a free port",
        ),
        (
            {"metrics": {"url": "http://h/metrics", "path": "/m"}},
            "backends.0.metrics.path: set url or path, not both",
        ),
        (
            {"metrics": {"interval_s": 2, "stale_after_s": 3}},
            "backends.0.metrics.stale_after_s: must be at least twice interval_s",
        ),
        (
            {"metrics": {"timeout_s": 10}},
            "backends.0.metrics.timeout_s: must not exceed stale_after_s",
        ),
        (
            {"metrics": {"interval_s": 0}},
            "backends.0.metrics.interval_s: Input should be greater than or equal to 0.05",
        ),
        (
            {"metrics": {"url": "file:///etc/passwd"}},
            "backends.0.metrics.url: String should match pattern '^https?://'",
        ),
        ({"metrics": {"every": 1}}, "backends.0.metrics.every: Extra inputs are not permitted"),
    ],
)
def test_metrics_config(fields: dict[str, Any], problem: str | None) -> None:
    config = make_config({"a": "http://10.0.0.11:8000/v1"}, model="m")
    if fields.get("kind") == "emulated":
        del config["backends"][0]["base_url"]
    config["backends"][0].update({"kind": "vllm", **fields})
    if problem is None:
        parse_config(config)
        return
    with pytest.raises(ConfigError) as caught:
        parse_config(config)
    assert caught.value.problems == [problem]


@pytest.mark.parametrize(
    ("metrics", "base_url", "url"),
    [
        ({}, "http://10.0.0.11:8000/v1", "http://10.0.0.11:8000/metrics"),
        ({}, "https://gpu-3.internal/serving/v1/", "https://gpu-3.internal/metrics"),
        ({}, "http://[::1]:30000/v1?x=1", "http://[::1]:30000/metrics"),
        ({"path": "/engine/metrics"}, "http://h:8000/v1", "http://h:8000/engine/metrics"),
        ({"url": "http://h:9090/metrics"}, "http://h:8000/v1", "http://h:9090/metrics"),
    ],
)
def test_metrics_url(metrics: dict[str, Any], base_url: str, url: str) -> None:
    assert metrics_url(backend(metrics=metrics), base_url) == url


def test_targets_only_for_enabled_backends() -> None:
    backends = [
        backend(name="on", metrics={}),
        backend(name="off", metrics={"enabled": False}),
        backend(name="never"),
    ]
    urls = {b.name: "http://127.0.0.1:8000/v1" for b in backends}
    assert [t.backend for t in scrape_targets(backends, urls)] == ["on"]


# -- staleness


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("age_s", "fresh"), [(0.0, True), (4.9, True), (5.0, True), (5.01, False), (60.0, False)]
)
def test_reading_is_ignored_once_stale(age_s: float, fresh: bool) -> None:
    clock = Clock()
    state = FleetState([backend(metrics={"stale_after_s": 5.0})], HealthConfig(), clock=clock)
    state.record_engine_load("a", EngineLoad("vllm", 12, 3, 0.83))
    clock.now += age_s
    view = state.views(["a"])["a"]
    expected = (12, 3, 0.83) if fresh else (None, None, None)
    assert (view.engine_running, view.engine_waiting, view.engine_kv_usage) == expected
    (described,) = state.describe()
    assert described["engine"] == {
        "family": "vllm",
        "running": 12,
        "waiting": 3,
        "kv_usage": 0.83,
        "age_s": pytest.approx(age_s),
        "fresh": fresh,
        "scrapes": 1,
        "scrape_failures": 0,
        "last_error": "",
    }


def test_failed_scrape_keeps_last_reading_until_stale() -> None:
    clock = Clock()
    state = FleetState([backend(metrics={"stale_after_s": 2.0})], HealthConfig(), clock=clock)
    state.record_engine_load("a", EngineLoad("vllm", 7, 0, None))
    clock.now += 1.0
    state.record_engine_load("a", None, "no answer within 0.5s")
    assert state.views(["a"])["a"].engine_running == 7
    clock.now += 1.5
    assert state.views(["a"])["a"].engine_running is None
    (described,) = state.describe()
    assert described["engine"]["scrape_failures"] == 1  # type: ignore[index]
    assert described["engine"]["last_error"] == "no answer within 0.5s"  # type: ignore[index]


def test_unscraped_backend_shows_no_engine() -> None:
    state = FleetState([backend()], HealthConfig())
    assert state.views(["a"])["a"].engine_running is None
    assert state.describe()[0]["engine"] is None


# -- scraping real servers on loopback


def _fast(**fields: Any) -> MetricsConfig:
    values: dict[str, Any] = {"interval_s": 0.05, "timeout_s": 0.3, "stale_after_s": 1.0}
    return MetricsConfig.model_validate({**values, **fields})


class FakeEngine:
    """A /metrics endpoint whose answer a test sets: (status, body, delay)."""

    def __init__(self) -> None:
        self.answer: tuple[int, str, float] = (200, VLLM_TEXT, 0.0)
        self.headers: list[dict[str, str]] = []
        self.app = Starlette(
            routes=[
                Route("/metrics", self.metrics, methods=["GET"]),
                Route("/moved", self.moved, methods=["GET"]),
            ]
        )

    async def metrics(self, request: Request) -> Response:
        self.headers.append(dict(request.headers))
        status, body, delay = self.answer
        await asyncio.sleep(delay)
        return PlainTextResponse(body, status_code=status)

    async def moved(self, request: Request) -> Response:
        return RedirectResponse("/metrics", status_code=302)


@pytest.fixture
async def fake_engine() -> AsyncIterator[tuple[FakeEngine, str]]:
    engine = FakeEngine()
    server = LoopbackServer(engine.app, lifespan="off")
    await server.start()
    yield engine, server.url
    await server.stop()


@pytest.fixture
async def scrape() -> AsyncIterator[Callable[[str], tuple[EngineScraper, ScrapeTarget]]]:
    made: list[EngineScraper] = []

    def make(url: str, **fields: Any) -> tuple[EngineScraper, ScrapeTarget]:
        config = backend(metrics={"interval_s": 0.05, "stale_after_s": 1.0})
        target = ScrapeTarget("a", url, ("m",), _fast(**fields))
        scraper = EngineScraper([target], FleetState([config], HealthConfig()))
        made.append(scraper)
        return scraper, target

    yield make
    for scraper in made:
        await scraper.stop()


@pytest.mark.parametrize(
    ("answer", "path", "error"),
    [
        ((200, VLLM_TEXT, 0.0), "/metrics", ""),
        ((404, "Not Found", 0.0), "/metrics", "HTTP 404"),
        ((500, VLLM_TEXT, 0.0), "/metrics", "HTTP 500"),
        ((200, VLLM_TEXT, 1.0), "/metrics", "no answer within 0.3s"),
        ((200, "up 1\n", 0.0), "/metrics", "no known engine metrics in the response"),
        ((200, "x" * 5000, 0.0), "/metrics", "body of 5,000 bytes is over 1,024"),
        ((200, VLLM_TEXT, 0.0), "/moved", "HTTP 302"),  # redirects are not followed
    ],
)
async def test_scrape_outcomes(
    fake_engine: tuple[FakeEngine, str],
    scrape: Callable[..., tuple[EngineScraper, ScrapeTarget]],
    answer: tuple[int, str, float],
    path: str,
    error: str,
) -> None:
    engine, url = fake_engine
    engine.answer = answer
    scraper, target = scrape(url + path, max_body_bytes=1024)
    load = await scraper.poll_once(target)
    assert (load == EngineLoad("vllm", 5, 2, None)) == (not error)
    described = scraper._state.describe()[0]["engine"]
    assert described["last_error"] == error  # type: ignore[index]
    assert described["scrape_failures"] == (1 if error else 0)  # type: ignore[index]


async def test_connection_refused_is_a_failure(
    scrape: Callable[..., tuple[EngineScraper, ScrapeTarget]],
) -> None:
    scraper, target = scrape(f"http://127.0.0.1:{free_port()}/metrics")
    assert await scraper.poll_once(target) is None
    error = scraper._state.describe()[0]["engine"]["last_error"]  # type: ignore[index]
    assert error.startswith("Client")


async def test_failures_are_logged_once_and_recovery_once(
    fake_engine: tuple[FakeEngine, str],
    scrape: Callable[..., tuple[EngineScraper, ScrapeTarget]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine, url = fake_engine
    scraper, target = scrape("http://user:s3cret@" + url.removeprefix("http://") + "/metrics")
    caplog.set_level(logging.DEBUG, logger="switchyard.engine_metrics")
    engine.answer = (503, "busy", 0.0)
    for _ in range(5):
        await scraper.poll_once(target)
    engine.answer = (200, VLLM_TEXT, 0.0)
    await scraper.poll_once(target)
    await scraper.poll_once(target)
    levels = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [lvl for lvl, _ in levels] == ["WARNING", *["DEBUG"] * 4, "INFO"]
    assert "HTTP 503" in levels[0][1]
    assert "s3cret" not in caplog.text


async def test_no_credentials_are_sent(
    fake_engine: tuple[FakeEngine, str],
    scrape: Callable[..., tuple[EngineScraper, ScrapeTarget]],
) -> None:
    engine, url = fake_engine
    scraper, target = scrape(url + "/metrics")
    await scraper.poll_once(target)
    (headers,) = engine.headers
    assert "authorization" not in headers
    assert headers["accept"].startswith("text/plain")


async def test_scrapes_the_real_emulator(
    start_emulator: StartEmulator, scrape: Callable[..., tuple[EngineScraper, ScrapeTarget]]
) -> None:
    engine = await start_emulator(models=["m"])
    config = backend(base_url=engine.base_url, metrics={})
    scraper, target = scrape(metrics_url(config, engine.base_url))
    assert target.url == f"http://127.0.0.1:{engine.port}/metrics"
    assert await scraper.poll_once(target) == EngineLoad("vllm", 0, 0, 0.0)


async def test_emulator_queue_is_seen(
    start_emulator: StartEmulator, scrape: Callable[..., tuple[EngineScraper, ScrapeTarget]]
) -> None:
    # One sequence at a time and slow decode steps: one request runs, the others wait.
    engine = await start_emulator(
        models=["m"], cost_model="batched", max_num_seqs=1, decode_base_ms=50.0
    )
    scraper, target = scrape(f"http://127.0.0.1:{engine.port}/metrics")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 200}
    async with httpx.AsyncClient(base_url=engine.base_url, timeout=30) as http:
        pending = [asyncio.create_task(http.post("/chat/completions", json=body)) for _ in range(3)]
        try:
            load = await _until(scraper, target, lambda x: x.running == 1 and x.waiting == 2)
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
    assert load.family == "vllm"
    assert load.kv_usage is not None and 0 < load.kv_usage < 1


async def _until(
    scraper: EngineScraper, target: ScrapeTarget, done: Callable[[EngineLoad], bool]
) -> EngineLoad:
    for _ in range(200):
        load = await scraper.poll_once(target)
        if load is not None and done(load):
            return load
        await asyncio.sleep(0.02)
    raise AssertionError(f"last reading: {load}")


async def test_the_scraper_polls_until_stopped(
    fake_engine: tuple[FakeEngine, str],
    scrape: Callable[..., tuple[EngineScraper, ScrapeTarget]],
) -> None:
    engine, url = fake_engine
    scraper, _ = scrape(url + "/metrics")
    scraper.start()

    async def scraped_thrice() -> bool:
        return len(engine.headers) >= 3

    await eventually(scraped_thrice, "three scrapes")
    await scraper.stop()
    scrapes = len(engine.headers)
    await asyncio.sleep(0)  # a loop turn: a poll still scheduled would go out now
    assert len(engine.headers) == scrapes, "stopped"
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "engine-metrics"]


# -- the gateway end to end


def _vllm_backend(name: str, url: str) -> dict[str, Any]:
    metrics = {"interval_s": 0.05, "stale_after_s": 2.0}
    return {"name": name, "kind": "vllm", "base_url": url, "models": ["m"], "metrics": metrics}


async def test_gateway_routes_around_load_it_did_not_send(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    busy = await start_emulator(
        models=["m"], cost_model="batched", max_num_seqs=1, decode_base_ms=50.0
    )
    idle = await start_emulator(models=["m"])
    profile = [{"ref": "healthy-filter"}, {"ref": "load-scorer"}, {"ref": "max-score-picker"}]
    config = make_config({"busy": busy.base_url, "idle": idle.base_url}, model="m", profile=profile)
    config["backends"] = [_vllm_backend(n, e.base_url) for n, e in (("busy", busy), ("idle", idle))]
    gw = await start_gateway(config)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 200}
    async with httpx.AsyncClient(base_url=busy.base_url, timeout=30) as other_client:
        pending = [
            asyncio.create_task(other_client.post("/chat/completions", json=body)) for _ in range(3)
        ]
        try:
            await _engine_seen(gw.client, "busy", lambda e: e["waiting"] == 2)
            chosen = []
            for _ in range(4):
                short = {**body, "model": "default", "max_tokens": 2}
                response = await gw.client.post("/v1/chat/completions", json=short)
                chosen.append(response.headers["x-switchyard-backend"])
            decision_id = response.headers["x-switchyard-decision"]
            decision = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
    assert chosen == ["idle"] * 4
    reasons = {c["backend"]: c["scores"]["load-scorer"]["reason"] for c in decision["candidates"]}
    assert "engine: 1 running, 2 waiting, KV " in reasons["busy"]
    assert "engine: 0 running, 0 waiting, KV 0%" in reasons["idle"]


async def _engine_seen(
    client: httpx.AsyncClient, name: str, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    for _ in range(200):
        backends = (await client.get("/v1/switchyard/backends")).json()["backends"]
        engine: dict[str, Any] | None = next(b for b in backends if b["name"] == name)["engine"]
        if engine is not None and engine["fresh"] and done(engine):
            return engine
        await asyncio.sleep(0.02)
    raise AssertionError(f"{name}: last seen {engine}")


async def test_emulated_backend_is_scraped_and_shown(start_gateway: StartGateway) -> None:
    config = make_config({"a": "unused"}, model="m")
    config["backends"] = [
        {"name": "a", "kind": "emulated", "models": ["m"], "metrics": {"interval_s": 0.05}},
        {"name": "b", "kind": "emulated", "models": ["m"]},
    ]
    config["routes"][0]["backends"] = ["a", "b"]
    gw = await start_gateway(config)
    engine = await _engine_seen(gw.client, "a", lambda e: e["scrapes"] > 0)
    assert engine["family"] == "vllm"
    assert engine["running"] == 0
    assert engine["last_error"] == ""
    backends = (await gw.client.get("/v1/switchyard/backends")).json()["backends"]
    assert backends[1]["engine"] is None
    assert gw.gateway.scraper is not None
    assert [t.backend for t in gw.gateway.scraper.targets] == ["a"]

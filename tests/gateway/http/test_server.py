"""`switchyard serve`'s server: uvicorn ticking once a second, stopped at once when asked;
its connections served by the bounded protocol where the installed uvicorn allows."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Generator

import httpx
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

import gateway.http.bounded_protocol as bounded
import gateway.http.relay.splice as splice
import gateway.http.server as server_module
from emulator.loopback import bind_loopback, wait_until_started
from gateway.config.clients import ClientsConfig
from gateway.http.server import QuietServer


async def _hello(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


class _Counting(QuietServer):
    """Notes each tick's counter: uvicorn refreshes the date header when it is a multiple
    of 10."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.counters: list[int] = []
        self.ticked = asyncio.Event()

    async def on_tick(self, counter: int) -> bool:
        self.counters.append(counter)
        self.ticked.set()
        return await super().on_tick(counter)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the test process keeps its own signal handlers


@contextlib.asynccontextmanager
async def _serving() -> AsyncIterator[tuple[_Counting, asyncio.Task[None], int]]:
    sock = bind_loopback("127.0.0.1", 0)
    config = uvicorn.Config(_hello, log_config=None, lifespan="off")
    server = _Counting(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_until_started(server, task)
        yield server, task, sock.getsockname()[1]
    finally:
        if not task.done():
            task.cancel()
        sock.close()


async def test_serves_with_a_date_header_and_stops_when_asked_with_the_next_tick_an_hour_away(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The tick after start-up's is an hour away: only the wake can end the server now.
    monkeypatch.setattr(server_module, "TICK_S", 3600.0)
    async with _serving() as (server, task, port):
        async with httpx.AsyncClient() as client:
            answer = await client.get(f"http://127.0.0.1:{port}/")
        assert answer.text == "hello"
        assert "date" in answer.headers
        assert server.counters == [0], "start-up's tick only"
        # Asked from another thread, as a signal handler or a supervisor would.
        threading.Thread(target=setattr, args=(server, "should_exit", True)).start()
        async with asyncio.timeout(30):  # a hang guard: not waiting for the hour
            await task
        assert server.should_exit


async def test_every_tick_refreshes_the_date_header(monkeypatch: pytest.MonkeyPatch) -> None:
    # How often an idle server wakes is measured by bench/cpu/cli.py (wake-ups a second);
    # here: each of its ticks is one on which uvicorn refreshes the date header.
    monkeypatch.setattr(server_module, "TICK_S", 0.01)
    async with _serving() as (server, task, _):
        while len(server.counters) < 4:
            server.ticked.clear()
            await server.ticked.wait()
        server.should_exit = True
        async with asyncio.timeout(30):
            await task
    assert server.counters[:4] == [0, 10, 20, 30]


def test_the_installed_uvicorn_has_the_hooks_the_quiet_server_overrides() -> None:
    assert server_module.quiet_supported()  # else `serve` would fall back to uvicorn's tick


def test_the_installed_uvicorn_sets_what_the_splice_reads() -> None:
    assert splice.splice_supported()  # else streams go the ASGI way, at more CPU per chunk


@pytest.mark.parametrize("missing", splice.CYCLE_ATTRIBUTES)
def test_a_cycle_without_an_attribute_the_splice_reads_turns_it_off(
    missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assigned = [name for name in splice.CYCLE_ATTRIBUTES if name != missing]
    source = "def __init__(self):\n" + "".join(f"    self.{n} = None\n" for n in assigned)
    namespace: dict[str, object] = {}
    exec(source, namespace)  # a cycle class as a uvicorn whose internals moved would have
    moved = type("RequestResponseCycle", (), {"__init__": namespace["__init__"]})
    monkeypatch.setattr(splice, "RequestResponseCycle", moved)
    assert not splice.splice_supported()


@pytest.mark.parametrize(("http", "warned"), [("h11", True), ("httptools", False)])
def test_serve_says_once_at_start_when_streams_are_not_spliced(
    http: str, warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="switchyard"):
        server_module.warn_unless_spliced(uvicorn.Config(app=None, http=http))
    assert ("not spliced" in caplog.text) is warned


def test_the_installed_uvicorn_has_what_the_bounded_protocol_uses() -> None:
    assert bounded.bounded_supported()  # else `serve` would not bound slow clients


@pytest.mark.parametrize(
    ("cls", "missing"),
    [("RequestResponseCycle", name) for name in bounded.CYCLE_ATTRIBUTES]
    + [("HttpToolsProtocol", name) for name in bounded.PROTOCOL_ATTRIBUTES],
)
def test_a_uvicorn_without_what_the_bounded_protocol_uses_turns_it_off(
    cls: str, missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    wanted = (
        bounded.CYCLE_ATTRIBUTES if cls == "RequestResponseCycle" else bounded.PROTOCOL_ATTRIBUTES
    )
    assigned = [name for name in wanted if name != missing]
    source = "def __init__(self, app_state):\n" + "".join(
        f"    self.{n} = None\n" for n in assigned
    )
    namespace: dict[str, object] = {}
    exec(source, namespace)  # a class as a uvicorn whose internals moved would have
    hooks = {hook: lambda self: None for hook in bounded.HOOKS}
    moved = type(cls, (), {"__init__": namespace["__init__"], **hooks})
    monkeypatch.setattr(bounded, cls, moved)
    assert not bounded.bounded_supported()


def test_serve_bounds_clients_with_the_bounded_protocol_and_says_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    options = server_module.client_options(ClientsConfig())
    assert options == {"http": bounded.BoundedHttpToolsProtocol}
    with caplog.at_level(logging.WARNING, logger="switchyard"):
        config = uvicorn.Config(app=None, **options)  # type: ignore[arg-type]
        server_module.warn_unless_spliced(config)  # still httptools: streams are spliced
        server_module.warn_unless_bounded(config)
    assert not caplog.records


def test_without_the_bounded_protocol_serve_caps_requests_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(bounded, "bounded_supported", lambda: False)
    options = server_module.client_options(ClientsConfig(max_connections=77))
    assert options == {"limit_concurrency": 77}
    with caplog.at_level(logging.WARNING, logger="switchyard"):
        server_module.warn_unless_bounded(uvicorn.Config(app=None, **options))  # type: ignore[arg-type]
    assert "client connections are not bounded in time" in caplog.text

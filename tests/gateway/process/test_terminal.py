"""What `switchyard serve` shows: the banner's content and which library lines are dropped."""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import embedded_config_path
from gateway.config.root import load_config
from gateway.process.terminal import (
    BatchedStreamHandler,
    QuietLibraryLines,
    SecondsFormatter,
    banner,
    logging_config,
    serve_logging_config,
)
from gateway.store.config import DATABASE_URL_ENV
from gateway.store.migrate import upgrade
from tests.conftest import make_config, parsed

PID = os.getpid()


def test_the_banner_of_the_embedded_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    path = embedded_config_path()
    shown = banner(
        load_config(path),
        path,
        embedded=True,
        host="127.0.0.1",
        port=8080,
        workers=1,
        log_level="info",
    )
    assert shown.splitlines() == [
        f"switchyard serving http://127.0.0.1:8080/v1 (pid {PID})",
        "  dashboard  http://127.0.0.1:8080/dashboard",
        f"  config     {path} (the embedded default)",
        "  store      sqlite+aiosqlite:///switchyard.db",
        "  fleet      5 backends, 4 routes: default, least-load, round-robin, mixed",
        "  auth       off (no client key needed; on 127.0.0.1 only)",
        "  demo       1 req/s on default, least-load",
        "  requests   one line each (--access-log json: the whole record and its decision)",
    ]


def test_the_banner_says_the_demo_is_off_where_clients_need_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    embedded = load_config(embedded_config_path())
    server = embedded.server.model_copy(update={"api_keys_env": "KEYS"})
    config = embedded.model_copy(update={"server": server})
    shown = banner(
        config,
        Path("my.yaml"),
        embedded=False,
        host="127.0.0.1",
        port=80,
        workers=1,
        log_level="info",
    )
    rows = dict(line.split(maxsplit=1) for line in shown.splitlines()[1:])
    assert rows["demo"] == (
        "off: clients need a key here and the demo sends none (demo.traffic_rps ignored)"
    )


def many_routes(config: dict[str, Any]) -> None:
    route = config["routes"][0]
    config["routes"] = [{**route, "name": f"r{i}"} for i in range(7)]


@pytest.mark.parametrize(
    ("change", "options", "expected"),
    [
        (
            lambda c: c.update(server={"api_keys_env": "CLIENT_KEYS"}),
            {},
            {"auth": "on (client keys from $CLIENT_KEYS)"},
        ),
        (
            lambda c: c.update(store={"url": "postgresql://app:s3cret@db:5432/rec"}),
            {},
            {"store": "postgresql+asyncpg://app:***@db:5432/rec"},
        ),
        (
            lambda c: c.update(telemetry={"dashboard": False, "access_log": "json"}),
            {},
            {
                "dashboard": "off",
                "requests": "one JSON record each (--access-log line: one short line)",
            },
        ),
        (
            lambda c: c.update(telemetry={"access_log": "off"}),
            {},
            {"requests": "not logged (--access-log line: one line each)"},
        ),
        (
            lambda c: None,
            {"log_level": "warning"},
            {"requests": "not logged at --log-level warning"},
        ),
        (many_routes, {}, {"fleet": "1 backend, 7 routes"}),
        (
            lambda c: c.update(keys={"enabled": True}, server={"admin_keys_env": "ADMIN"}),
            {},
            {"auth": "on (virtual keys from the store, admin keys from $ADMIN)"},
        ),
        (
            lambda c: c.update(server={"allow_unauthenticated": True}),
            {"host": "0.0.0.0"},
            {"auth": "off (no client key needed; on 0.0.0.0: allow_unauthenticated)"},
        ),
    ],
    ids=[
        "auth",
        "store-redacted",
        "json-no-dashboard",
        "log-off",
        "log-level",
        "many-routes",
        "virtual-keys",
        "open-elsewhere",
    ],
)
def test_the_banner_says_what_is_on(
    change: Any, options: dict[str, Any], expected: dict[str, str]
) -> None:
    config = make_config({"a": "http://127.0.0.1:9/v1"})
    change(config)
    settings: dict[str, Any] = {"host": "127.0.0.1", "port": 80, "workers": 1, "log_level": "info"}
    shown = banner(parsed(config), Path("my.yaml"), embedded=False, **{**settings, **options})
    rows = dict(line.split(maxsplit=1) for line in shown.splitlines()[1:])
    assert rows["config"] == "my.yaml"
    assert "demo" not in rows
    for name, value in expected.items():
        assert rows[name] == value


@pytest.mark.parametrize(
    ("host", "workers", "first"),
    [
        ("0.0.0.0", 4, f"switchyard serving http://0.0.0.0:9000/v1 (pid {PID}, 4 workers)"),
        ("::1", 1, f"switchyard serving http://[::1]:9000/v1 (pid {PID})"),
    ],
)
def test_the_banner_names_the_url_and_the_processes(host: str, workers: int, first: str) -> None:
    config = parsed(make_config({"a": "http://127.0.0.1:9/v1"}))
    options: dict[str, Any] = {"port": 9000, "log_level": "info", "embedded": False}
    shown = banner(config, Path("c.yaml"), host=host, workers=workers, **options)
    assert shown.splitlines()[0] == first


def log_record(name: str, level: int, msg: str, *args: Any) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


@pytest.mark.parametrize(
    ("name", "level", "msg", "shown"),
    [
        ("alembic.runtime.plugins", logging.INFO, "setup plugin %s", False),
        ("alembic.runtime.migration", logging.INFO, "Context impl %s.", False),
        ("alembic.runtime.migration", logging.INFO, "Will assume %s DDL.", False),
        ("alembic.runtime.migration", logging.INFO, "Running upgrade %s -> %s, %s", True),
        ("uvicorn.error", logging.INFO, "Started server process [%d]", False),
        ("uvicorn.error", logging.INFO, "Waiting for application startup.", False),
        ("uvicorn.error", logging.INFO, "Application startup complete.", False),
        ("uvicorn.error", logging.INFO, "Started parent process [42]", False),
        ("uvicorn.error", logging.INFO, "Shutting down", False),
        ("uvicorn.error", logging.INFO, "Finished server process [%d]", False),
        ("uvicorn.error", logging.INFO, "Uvicorn running on %s://%s:%d (Press CTRL+C", True),
        ("uvicorn.error", logging.INFO, "Application shutdown complete.", True),
        # Errors and warnings always show, whatever they say.
        ("uvicorn.error", logging.ERROR, "Started server process [%d]", True),
        ("alembic.runtime.migration", logging.WARNING, "Context impl %s.", True),
        # Only the named loggers are quieted.
        ("switchyard", logging.INFO, "Shutting down", True),
    ],
)
def test_quiet_library_lines(name: str, level: int, msg: str, shown: bool) -> None:
    assert QuietLibraryLines().filter(log_record(name, level, msg)) is shown


async def test_a_migration_shows_its_steps_but_not_alembics_set_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.handler.addFilter(QuietLibraryLines())
    with caplog.at_level(logging.INFO):
        await upgrade(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    alembic = [r.getMessage() for r in caplog.records if r.name.startswith("alembic")]
    assert [line[:28] for line in alembic] == [
        "Running upgrade  -> 0001, Th",
        "Running upgrade 0001 -> 0002",
        "Running upgrade 0002 -> 0003",
        "Running upgrade 0003 -> 0004",
        "Running upgrade 0004 -> 0005",
    ]


@pytest.mark.parametrize(("mode", "own_handler"), [("line", True), ("json", False)])
def test_request_lines_have_their_own_format_in_line_mode(mode: Any, own_handler: bool) -> None:
    config = serve_logging_config("info", mode)
    request_logger = config["loggers"]["switchyard.access"]
    assert request_logger["propagate"] is not own_handler
    assert request_logger["handlers"] == (["request"] if own_handler else [])
    # uvicorn's own lines keep their look, through the same filter.
    assert config["handlers"]["default"]["filters"] == ["quiet"]
    assert config["handlers"]["plain"]["filters"] == ["quiet"]
    assert (
        config["root"]
        == logging_config("info", mode)["root"]
        == {
            "level": "INFO",
            "handlers": ["plain"],
        }
    )


def test_the_seconds_formatter_writes_what_the_standard_one_does() -> None:
    for fmt, datefmt in [
        ("%(asctime)s %(name)s %(message)s", None),
        ("%(asctime)s %(message)s", "%H:%M:%S"),
    ]:
        ours, standard = SecondsFormatter(fmt, datefmt), logging.Formatter(fmt, datefmt)
        for created in (1_000_000.0, 1_000_000.25, 1_000_000.999, 1_000_001.5, 999_999.0):
            made = logging.makeLogRecord({"name": "switchyard.access", "msg": "line"})
            made.created, made.msecs = created, int((created - int(created)) * 1000) + 0.0
            assert ours.format(made) == standard.format(made)


def test_the_batched_handler_writes_once_it_holds_its_bound() -> None:
    stream = io.StringIO()
    handler = BatchedStreamHandler(stream, max_lines=2)
    for text in ("one", "two", "three"):
        handler.handle(logging.makeLogRecord({"msg": text}))
    assert stream.getvalue() == "one\ntwo\n"
    handler.flush()
    assert stream.getvalue() == "one\ntwo\nthree\n"

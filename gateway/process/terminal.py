"""What `switchyard` shows in the terminal: the logging set-up and the `serve` banner.

`switchyard serve` prints a short banner (where the API and the dashboard are, which config
and store, how many backends and routes, whether auth is on), then one line per request
from the access log. The logging set-up is also handed to uvicorn as its `log_config`, so
every worker process of `--workers N` applies it too.

Library lines that tell an operator nothing are dropped by their message template:
Alembic announcing its plugins and its dialect on every start, uvicorn's start-up steps
(the banner says it better) and the "Started/Finished server process" that each
in-process engine's server repeats. Warnings and errors always pass, and so do the
migration steps Alembic actually runs.
"""

from __future__ import annotations

import copy
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.config.root import Config
    from gateway.telemetry.config import AccessLogMode

_SAYS_NOTHING: dict[str, tuple[str, ...]] = {
    "alembic.runtime.plugins": ("setup plugin ",),
    "alembic.runtime.migration": ("Context impl ", "Will assume "),
    "uvicorn.error": (
        "Started server process ",
        "Waiting for application startup.",
        "Application startup complete.",
        "Started parent process ",
        "Shutting down",
        "Finished server process ",
    ),
}
_ROUTES_NAMED = 6
"""Up to this many routes, the banner names them."""


class QuietLibraryLines(logging.Filter):
    """Drops the routine INFO lines of Alembic and uvicorn listed above."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        prefixes = _SAYS_NOTHING.get(record.name, ())
        return not str(record.msg).startswith(prefixes)


class SecondsFormatter(logging.Formatter):
    """A `logging.Formatter` that formats each second's date and time once: the access log
    writes many lines a second, and `strftime` was a tenth of a line's cost."""

    _last: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        second = int(record.created)
        last = self._last
        if last[0] != second:
            text = time.strftime(datefmt or self.default_time_format, self.converter(second))
            last = self._last = (second, text)
        if datefmt or not self.default_msec_format:
            return last[1]
        return self.default_msec_format % (last[1], record.msecs)


class BatchedStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The access log's handler in `line` mode: keeps the lines of a batch and writes them
    in one write when flushed (`AccessLog.flush`, after each batch), or once it holds
    `max_lines`; one write and flush per line cost as much as formatting it."""

    def __init__(self, stream: Any = None, max_lines: int = 1024) -> None:
        super().__init__(stream)
        self._lines: list[str] = []
        self._max_lines = max_lines

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._lines.append(self.format(record) + self.terminator)
        except Exception:  # noqa: BLE001 - as StreamHandler.emit: handleError reports it
            self.handleError(record)
            return
        if len(self._lines) >= self._max_lines:
            self.flush()

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            lines, self._lines = self._lines, []
            if lines and self.stream is not None:
                self.stream.write("".join(lines))
            super().flush()


def logging_config(level: str, access_log: AccessLogMode = "line") -> dict[str, Any]:
    """For `logging.config.dictConfig`: every line to stderr; a request's line (`line`
    mode) after the time of day only, everything else after the date and logger name."""
    seconds = f"{__name__}.SecondsFormatter"
    request_logger: dict[str, Any] = (
        {"handlers": ["request"], "propagate": False}
        if access_log == "line"
        else {"handlers": [], "propagate": True}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"quiet": {"()": f"{__name__}.QuietLibraryLines"}},
        "formatters": {
            "plain": {"()": seconds, "format": "%(asctime)s %(name)s %(message)s"},
            "request": {"()": seconds, "format": "%(asctime)s %(message)s", "datefmt": "%H:%M:%S"},
        },
        "handlers": {
            "plain": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["quiet"]},
            "request": {"class": f"{__name__}.BatchedStreamHandler", "formatter": "request"},
        },
        "loggers": {
            # httpx logs every upstream call at INFO; the access log says what matters.
            "httpx": {"level": "WARNING"},
            "switchyard.access": request_logger,
        },
        "root": {"level": level.upper(), "handlers": ["plain"]},
    }


def serve_logging_config(level: str, access_log: AccessLogMode) -> dict[str, Any]:
    """`logging_config` plus uvicorn's own loggers, as uvicorn formats them."""
    config = logging_config(level, access_log)
    from uvicorn.config import LOGGING_CONFIG  # serve's only: the CLI's other commands skip it

    uvicorn_part = copy.deepcopy(LOGGING_CONFIG)
    for section in ("formatters", "handlers", "loggers"):
        config[section].update(uvicorn_part[section])
    config["handlers"]["default"]["filters"] = ["quiet"]
    return config


def banner(
    config: Config,
    config_path: Path,
    *,
    embedded: bool,
    host: str,
    port: int,
    workers: int,
    log_level: str,
) -> str:
    """What `serve` prints once, before it starts serving (with `--workers N`, the parent)."""
    origin = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    processes = f"pid {os.getpid()}" + (f", {workers} workers" if workers > 1 else "")
    where = f"{config_path} (the embedded default)" if embedded else str(config_path)
    rows = [
        ("dashboard", f"{origin}/dashboard" if config.telemetry.dashboard else "off"),
        ("config", where),
        ("store", _store(config)),
        ("fleet", _fleet(config)),
        ("auth", _auth(config, host)),
    ]
    if config.demo.traffic_rps > 0:
        rows.append(("demo", _demo(config)))
    rows.append(("requests", _requests(config.telemetry.access_log, log_level)))
    lines = [f"switchyard serving {origin}/v1 ({processes})"]
    lines += [f"  {name:<10} {value}" for name, value in rows]
    return "\n".join(lines)


def _store(config: Config) -> str:
    # Imported here: worker processes import this module for its log filter alone, and
    # the database layer (for the URL's redaction) only when the store is on.
    from gateway.store.config import resolve_url

    url = resolve_url(config.store)
    if url is None:
        return "off"
    from gateway.store.database import redact_url

    return redact_url(url)


def _fleet(config: Config) -> str:
    routes = [route.name for route in config.routes]
    named = f": {', '.join(routes)}" if len(routes) <= _ROUTES_NAMED else ""
    return f"{_count(len(config.backends), 'backend')}, {_count(len(routes), 'route')}{named}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _auth(config: Config, host: str) -> str:
    server = config.server
    sources = [f"client keys from ${server.api_keys_env}"] if server.api_keys_env else []
    if config.keys.enabled:
        sources.append("virtual keys from the store")
    if server.admin_keys_env:
        sources.append(f"admin keys from ${server.admin_keys_env}")
    if server.metrics_token_env:
        sources.append(f"/metrics token from ${server.metrics_token_env}")
    if config.clients_need_keys:
        return f"on ({', '.join(sources)})"
    # Imported here: worker processes import this module for its log filter alone.
    from gateway.tenancy.auth import is_loopback

    where = f"on {host} only" if is_loopback(host) else f"on {host}: allow_unauthenticated"
    extra = "".join(f"; {source}" for source in sources)
    return f"off (no client key needed; {where}{extra})"


def _demo(config: Config) -> str:
    if not config.demo_traffic_on:
        return "off: clients need a key here and the demo sends none (demo.traffic_rps ignored)"
    routes = ", ".join(config.demo.routes) or "every route"
    return f"{config.demo.traffic_rps:g} req/s on {routes}"


def _requests(access_log: AccessLogMode, log_level: str) -> str:
    if access_log == "off":
        return "not logged (--access-log line: one line each)"
    from uvicorn.config import LOG_LEVELS

    if LOG_LEVELS.get(log_level.lower(), logging.INFO) > logging.INFO:
        return f"not logged at --log-level {log_level}"
    if access_log == "json":
        return "one JSON record each (--access-log line: one short line)"
    return "one line each (--access-log json: the whole record and its decision)"

"""``switchyard emulate``: serve an emulated engine in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from typing import Any

import uvicorn

from gateway.emulator.app import create_app
from gateway.emulator.runtime_state import EmulatorRuntime
from gateway.emulator.settings import EmulatorSettings, Faults
from gateway.loopback import bind_loopback, http_origin, loopback_host, wait_until_started

# (flag, settings field, type); argparse defaults are None so pydantic's defaults apply.
_SETTING_FLAGS: list[tuple[str, str, type]] = [
    ("--token-delay-ms", "token_delay_ms", float),
    ("--base-latency-ms", "base_latency_ms", float),
    ("--prefill-ms-per-1k-tokens", "prefill_ms_per_1k_tokens", float),
    ("--time-scale", "time_scale", float),
    ("--embedding-dim", "embedding_dim", int),
]
_FAULT_FLAGS: list[tuple[str, str, type]] = [
    ("--fail-status", "fail_status", int),
    ("--fail-count", "fail_count", int),
    ("--retry-after-s", "retry_after_s", float),
    ("--stall-before-first-byte-s", "stall_before_first_byte_s", float),
    ("--cut-stream-after-chunks", "cut_stream_after_chunks", int),
    ("--error-event-after-chunks", "error_event_after_chunks", int),
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="loopback address (default: %(default)s)"
    )
    parser.add_argument(
        "--port", type=int, default=9001, help="0 picks a free port (default: %(default)s)"
    )
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="NAME",
        help="model name to serve; repeatable (default: emulated-model)",
    )
    for flag, field, kind in _SETTING_FLAGS:
        default = EmulatorSettings.model_fields[field].default
        parser.add_argument(flag, dest=field, type=kind, help=f"default: {default}")
    for flag, field, kind in _FAULT_FLAGS:
        info = Faults.model_fields[field]
        parser.add_argument(
            flag, dest=field, type=kind, help=f"{info.description} (default: {info.default})"
        )


def settings_from_args(args: argparse.Namespace) -> EmulatorSettings:
    """Settings from parsed flags; raises pydantic's ValidationError (a ValueError)."""
    chosen: dict[str, Any] = {field: getattr(args, field) for _, field, _ in _SETTING_FLAGS}
    faults = {field: getattr(args, field) for _, field, _ in _FAULT_FLAGS}
    if args.models:
        chosen["models"] = args.models
    fields = {name: value for name, value in chosen.items() if value is not None}
    fault_fields = {name: value for name, value in faults.items() if value is not None}
    return EmulatorSettings(**fields, faults=Faults(**fault_fields))


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; prints one ready line with the base URL."""
    try:
        host = loopback_host(args.host)
        settings = settings_from_args(args)
        sock = bind_loopback(host, args.port)
    except (ValueError, OSError) as exc:
        print(f"switchyard emulate: {exc}", file=sys.stderr)
        return 2
    config = uvicorn.Config(
        create_app(EmulatorRuntime(settings)),
        log_level="warning",
        access_log=False,
        lifespan="off",
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    try:
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            runner.run(_serve(server, sock, host))
    except KeyboardInterrupt:
        # uvicorn already shut down gracefully and re-raised the signal for us.
        pass
    return 0


async def _serve(server: uvicorn.Server, sock: socket.socket, host: str) -> None:
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await wait_until_started(server, task)
    port = int(sock.getsockname()[1])
    print(f"emulator listening on {http_origin(host, port)}/v1", flush=True)
    await task

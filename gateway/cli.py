"""The `switchyard` command: serve, check, explain, emulate, bench, db, keys, engines."""

from __future__ import annotations

import argparse
import functools
import logging.config
import math
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from gateway.errors import ConfigError, SwitchyardError
from gateway.process.terminal import logging_config

if TYPE_CHECKING:
    from gateway.config.root import Config
    from gateway.telemetry.config import AccessLogMode

EMBEDDED_CONFIG = "embedded.yaml"
KEYS_HELP = "create, list, rotate and revoke virtual client keys"
DB_HELP = "migrate the record store"
ENGINES_HELP = "start, stop and list real llama.cpp engines on this machine"
RESILIENCE_BENCHES = ("hold", "soak", "kill-backend", "store-outage", "slow-clients")
"""Load and soak scenarios (bench/resilience/), one command each."""


def embedded_config_path() -> Path:
    return Path(str(resources.files("gateway") / "examples" / EMBEDDED_CONFIG))


def _load(path: str | None) -> Config:
    # Each command imports what it runs: `switchyard --help` loads no config schema.
    from gateway.config.root import load_config

    return load_config(path or embedded_config_path())


def _serve(args: argparse.Namespace) -> int:
    from gateway.http.app import create_app
    from gateway.http.server import run as serve_one
    from gateway.process.pid_file import pid_file
    from gateway.process.preflight import preflight
    from gateway.process.terminal import banner
    from gateway.process.workers import prepare_metrics_dir, prepare_workers, serve_workers

    config = _with_access_log(_load(args.config), args.access_log)
    host = args.host or config.server.host
    # Refused here, every problem named, not in the lifespan; `check` runs the same.
    found = preflight(config, host)
    if found.errors:
        found.warn_or_refuse(sys.stderr)  # raises
    port = args.port if args.port is not None else config.server.port
    config_path = Path(args.config) if args.config else embedded_config_path()
    shown = banner(
        config,
        config_path,
        embedded=not args.config,
        host=host,
        port=port,
        workers=args.workers,
        log_level=args.log_level,
    )
    print(shown, file=sys.stderr)
    found.warn_or_refuse(sys.stderr)  # no errors left: the warnings, under the banner
    sys.stderr.flush()
    common = _uvicorn_options(args, config, host, port)
    cleanup = prepare_metrics_dir(args.workers)
    try:
        with pid_file(Path(args.pid_file) if args.pid_file else None):
            if args.workers > 1:
                prepare_workers(config, config_path)
                serve_workers(args.workers, common)
            else:
                reload_from = functools.partial(_reread, config_path, args.access_log)
                serve_one(create_app(config, reload_from=reload_from, signals=True), common)
    finally:
        cleanup()
    return 0


def _reread(path: Path, mode: AccessLogMode | None) -> Config:
    """The config file again, as `serve` runs it (a reload)."""
    return _with_access_log(_load(str(path)), mode)


def _uvicorn_options(
    args: argparse.Namespace, config: Config, host: str, port: int
) -> dict[str, Any]:
    from gateway.http.server import client_options
    from gateway.process.runtime import CUT_GRACE_S
    from gateway.process.terminal import serve_logging_config

    return {
        "host": host,
        "port": port,
        "log_level": args.log_level,
        # The same set-up in every worker: quiet libraries, one line per request.
        "log_config": serve_logging_config(args.log_level, config.telemetry.access_log),
        "access_log": False,
        # No WebSocket route: uvicorn need not load its WebSocket protocol (nor accept one).
        "ws": "none",
        # The drain (SIGTERM/SIGINT) runs first and leaves nothing open; this bounds the
        # connections left when a signal comes before the drain is set up.
        "timeout_graceful_shutdown": math.ceil(config.server.shutdown_drain_s + CUT_GRACE_S),
        "timeout_keep_alive": config.server.keep_alive_s,
        # Read timeouts and a cap on connections: the bounded protocol, where it runs.
        **client_options(config.server.clients),
    }


def _with_access_log(config: Config, mode: AccessLogMode | None) -> Config:
    """`config` with `--access-log` applied, when it was given."""
    if mode is None:
        return config
    telemetry = config.telemetry.model_copy(update={"access_log": mode})
    return config.model_copy(update={"telemetry": telemetry})


def _check(args: argparse.Namespace) -> int:
    """0: valid (warnings, if any, on stderr); 1: warnings with --strict; 2: errors, the
    file's or, unless --file-only, those `serve` would refuse to start with."""
    config = _load(args.config)
    warned = False
    if not args.file_only:
        from gateway.process.preflight import preflight

        found = preflight(config, args.host or config.server.host)
        found.warn_or_refuse(sys.stderr)
        warned = bool(found.warnings)
    cascades = f", {len(config.cascades)} cascades" if config.cascades else ""
    print(
        f"ok: {len(config.backends)} backends, {len(config.routes)} routes, "
        f"{len(config.profiles)} profiles{cascades}"
    )
    discovering = [(i, b) for i, b in enumerate(config.backends) if b.discover is not None]
    if discovering:
        from gateway.discovery.expand import summary

        for i, entry in discovering:
            print(f"backends.{i} ({entry.name}) discovers: {summary(entry)}")
    return 1 if warned and args.strict else 0


def _explain(args: argparse.Namespace) -> int:
    from gateway.routing.explain import explain_request

    config, discovered = _discovered(_load(args.config))
    raw = sys.stdin.buffer.read() if args.request == "-" else Path(args.request).read_bytes()
    headers = dict(h.split("=", 1) for h in args.header)
    result = explain_request(config, raw, endpoint=args.endpoint, headers=headers)
    if discovered:
        result["discovery"] = discovered
    sys.stdout.write(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0


def _discovered(config: Config) -> tuple[Config, list[dict[str, Any]]]:
    """`config` with each discovering entry expanded by one lookup, as `serve` starts, and
    what each found; `config` itself when it discovers nothing."""
    if all(backend.discover is None for backend in config.backends):
        return config, []
    import asyncio

    from gateway.process.discovery_wiring import open_discovery

    discovery = asyncio.run(open_discovery(config))
    return discovery.expand(config), discovery.status(config)


BENCH_MODULES = {
    "replay": "bench.replay.cli",
    "matrix": "bench.matrix.cli",
    "overhead": "bench.overhead.cli",
    "cpu": "bench.cpu.cli",
    "decision": "bench.decision.cli",
    "quality": "bench.quality.cli",
    "cascade": "bench.cascade.cli",
    "quality-real": "bench.quality_real.cli",
    "real-engines": "bench.real_engines.cli",
    "telemetry": "bench.telemetry_cost",
    **dict.fromkeys(RESILIENCE_BENCHES, "bench.resilience.cli"),
}
"""Each benchmark's module; its `main(argv)` runs it."""


def _bench(args: argparse.Namespace) -> int:
    # The benchmarks live in the repository's bench/ package, next to the sources.
    import importlib

    rest = list(args.bench_args)
    if args.bench_name in RESILIENCE_BENCHES:  # one command, the scenario its first argument
        rest = [args.bench_name, *rest]
    code: int = importlib.import_module(BENCH_MODULES[args.bench_name]).main(rest)
    return code


def _emulate(args: argparse.Namespace) -> int:
    from emulator import cli as emulator_cli

    return emulator_cli.run(emulator_cli.parse(args.emulate_argv))


def _db(args: argparse.Namespace) -> int:
    from gateway.store.commands import run_db_command

    return run_db_command(_load(args.config), args)


def _keys(args: argparse.Namespace) -> int:
    from gateway.tenancy.commands import run_keys_command

    return run_keys_command(_load(args.config), args)


def _header(text: str) -> str:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return text


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; `command` (the first argument) adds that command's own arguments
    where the command keeps them in its own module."""
    parser = argparse.ArgumentParser(prog="switchyard", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", help="config YAML (default: the bundled embedded example)")
    serve.add_argument("--host", help="bind address (default from config: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default from config: 8080)")
    serve.add_argument("--log-level", default="info")
    serve.add_argument(
        "--access-log",
        choices=["off", "line", "json"],
        help="per request: nothing, one short line, or the whole record as JSON "
        "(default from config: telemetry.access_log, line)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes (default 1); each routes on its own state unless "
        "state.backend is redis; /metrics adds all workers up",
    )
    serve.add_argument(
        "--pid-file",
        help="write the pid that takes SIGHUP (reload) and SIGTERM (drain) here: "
        "the parent with --workers; removed at exit",
    )
    serve.set_defaults(func=_serve)

    check = sub.add_parser(
        "check",
        help="validate a config and the environment serve reads; errors name their YAML path",
        description="Exit 0: serve would start (warnings on stderr); 1: warnings, with "
        "--strict; 2: errors.",
    )
    check.add_argument("--config", help="config YAML (default: the bundled embedded example)")
    check.add_argument("--host", help="the address serve would bind (default from config)")
    check.add_argument(
        "--file-only",
        action="store_true",
        help="the file alone, not the environment (CI without the deployment's secrets)",
    )
    check.add_argument("--strict", action="store_true", help="exit 1 when there are warnings")
    check.set_defaults(func=_check)

    explain = sub.add_parser("explain", help="dry-run routing for one request; sends nothing")
    explain.add_argument("request", help="request JSON file, or - for stdin")
    explain.add_argument("--config", help="config YAML (default: the bundled embedded example)")
    explain.add_argument(
        "--endpoint",
        default="chat.completions",
        choices=["chat.completions", "completions", "embeddings", "messages", "responses"],
        help="the API the body is for: messages is Anthropic's /v1/messages, responses "
        "OpenAI's /v1/responses, both read as the gateway reads them (default: %(default)s)",
    )
    explain.add_argument(
        "--header", action="append", default=[], type=_header, help="NAME=VALUE, repeatable"
    )
    explain.set_defaults(func=_explain)

    bench = sub.add_parser(
        "bench",
        help="run a benchmark: replay (trace replay), matrix (every workload cell through "
        "every policy), overhead, decision, quality (faults), quality-real (probes "
        "calibrated on real llama.cpp replicas), real-engines (a chat trace through "
        "round-robin, least-load and cache-aware on real llama.cpp replicas), cpu (CPU "
        "per request and per SSE chunk with the defaults on, and what each part costs), "
        "telemetry (what records, metrics and the store cost), cascade (a cheap tier "
        "first against always-small and always-strong, on a real llama.cpp small tier), "
        "or hold, soak, kill-backend, store-outage, slow-clients (load and soak: "
        "docs/reliability.md)",
        description="Arguments after the benchmark's name go to it; see `switchyard bench "
        "replay --help`.",
    )
    bench.add_argument(
        "bench_name",
        choices=list(BENCH_MODULES),
    )
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    bench.set_defaults(func=_bench)

    # Its arguments, read off the emulator's settings model, are parsed by the emulator's
    # own parser when the command runs (`switchyard emulate --help` lists them).
    emulate = sub.add_parser(
        "emulate",
        help="run an emulated engine: OpenAI, Anthropic and Gemini formats on one port",
        add_help=False,
    )
    emulate.set_defaults(func=_emulate)

    # `db`, `keys` and `engines` declare their own arguments; their modules are imported
    # only when the command line names them (the rest of the CLI, `serve` included, does
    # without).
    if command == "db":
        from gateway.store.commands import add_db_parser

        add_db_parser(sub, DB_HELP).set_defaults(func=_db)
    else:
        sub.add_parser("db", help=DB_HELP, add_help=False)
    if command == "keys":
        from gateway.tenancy.commands import add_keys_parser

        add_keys_parser(sub, KEYS_HELP).set_defaults(func=_keys)
    else:
        sub.add_parser("keys", help=KEYS_HELP, add_help=False)
    if command == "engines":
        from gateway.engines.commands import add_engines_parser

        add_engines_parser(
            sub, ENGINES_HELP
        )  # `switchyard engines ...`, dispatched through its `func`
    else:
        sub.add_parser("engines", help=ENGINES_HELP, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(next((a for a in given if not a.startswith("-")), None))
    args, rest = parser.parse_known_args(given)
    if args.command == "emulate":
        args.emulate_argv = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if not logging.getLogger().handlers:  # like basicConfig: a test runner's set-up stays
        logging.config.dictConfig(logging_config(str(getattr(args, "log_level", "info"))))
    try:
        code: int = args.func(args)
    except ConfigError as exc:
        print(f"config error in {exc.source}:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    except SwitchyardError as exc:  # explain: the request itself is wrong
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())

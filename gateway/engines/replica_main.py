"""One llama.cpp replica as a child process: `python -m gateway.engines.replica_main`.

It runs xllamacpp's `Server` (llama.cpp's `llama-server`, in-process: constructing it loads
the model and starts the HTTP server on a background thread, deleting it stops both) on
127.0.0.1 with the `/metrics`, `/slots` and `/props` endpoints on and prompt caching on,
and waits for SIGTERM or SIGINT. Exit codes: 0 after a signal, 3 when the server could not
start (the model, or the port taken), 4 when its parent went away (`--exit-with-parent`).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

HOST = "127.0.0.1"
KV_TYPES = ("f16", "q8_0", "q4_0")
"""K-cache types offered; a quantised V cache needs flash attention, so V stays f16."""
PARENT_POLL_S = 1.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gateway.engines.replica_main")
    parser.add_argument("--model", required=True, help="GGUF file")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (default 1)")
    parser.add_argument("--parallel", type=int, default=1, help="slots (default 1)")
    parser.add_argument(
        "--ctx-size",
        type=int,
        default=2048,
        help="tokens per slot: prompt plus output of one sequence (default 2048)",
    )
    parser.add_argument(
        "--cache-ram-mib",
        type=int,
        default=64,
        help="host memory for prompts evicted from the slots (default 64 MiB)",
    )
    parser.add_argument("--cache-type-k", choices=KV_TYPES, help="K cache type (default f16)")
    parser.add_argument("--chat-template", help="a built-in template name (default: the GGUF's)")
    parser.add_argument("--alias", help="the model id it answers to (default: the file's)")
    parser.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="stop when the process that started it exits (test fixtures)",
    )
    return parser


def server_params(args: argparse.Namespace) -> Any:
    """xllamacpp's `CommonParams` for these arguments."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [HOST]
    params.port = args.port
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.n_parallel = args.parallel
    # llama.cpp splits n_ctx among the slots; --ctx-size is what each sequence gets.
    params.n_ctx = args.ctx_size * args.parallel
    params.cache_ram_mib = args.cache_ram_mib
    params.cache_prompt = True
    params.endpoint_metrics = True
    params.endpoint_slots = True
    params.endpoint_props = True
    if args.cache_type_k:
        params.cache_type_k = getattr(xllamacpp.ggml_type, f"GGML_TYPE_{args.cache_type_k.upper()}")
    if args.chat_template:
        # A built-in template name is only read as a name with Jinja off; with Jinja on,
        # llama.cpp renders the name itself as the template (every prompt becomes "chatml").
        params.chat_template = args.chat_template
        params.use_jinja = False
    if args.alias:
        params.model_alias = {args.alias}
    return params


def _stop_on_signals(stop: threading.Event) -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())


def _watch_parent(stop: threading.Event, parent: int, orphaned: threading.Event) -> None:
    # A crashed test run must not leave engines behind on a shared machine: once the
    # parent is gone the child is re-parented, and getppid() changes.
    while not stop.wait(PARENT_POLL_S):
        if os.getppid() != parent:
            orphaned.set()
            stop.set()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stop, orphaned = threading.Event(), threading.Event()
    _stop_on_signals(stop)
    if args.exit_with_parent:
        watch = (stop, os.getppid(), orphaned)
        threading.Thread(target=_watch_parent, args=watch, daemon=True).start()
    import xllamacpp

    try:
        server = xllamacpp.Server(server_params(args))
    except RuntimeError as exc:  # llama.cpp logged the reason (bad model, port taken) above
        print(f"replica: llama.cpp server did not start: {exc}", file=sys.stderr, flush=True)
        return 3
    print(f"replica: serving {args.model} at {server.listening_address}", flush=True)
    stop.wait()
    print("replica: stopping", flush=True)
    del server  # joins llama.cpp's HTTP and inference threads
    print("replica: stopped", flush=True)
    return 4 if orphaned.is_set() else 0


if __name__ == "__main__":
    sys.exit(main())

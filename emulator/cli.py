"""``switchyard emulate``: serve one emulated engine, or a fleet of them, in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from emulator.settings import EmulatorSettings, Faults

if TYPE_CHECKING:
    from emulator.fleet import EmulatorFleet

# (flag, settings field, type); argparse defaults are None so pydantic's defaults apply.
_SETTING_FLAGS: list[tuple[str, str, type]] = [
    ("--token-delay-ms", "token_delay_ms", float),
    ("--base-latency-ms", "base_latency_ms", float),
    ("--prefill-ms-per-1k-tokens", "prefill_ms_per_1k_tokens", float),
    ("--time-scale", "time_scale", float),
    ("--embedding-dim", "embedding_dim", int),
    ("--cost-model", "cost_model", str),
    ("--kv-capacity-tokens", "kv_capacity_tokens", int),
    ("--block-tokens", "block_tokens", int),
    ("--bytes-per-token", "bytes_per_token", float),
    ("--prefill-tokens-per-s", "prefill_tokens_per_s", float),
    ("--decode-base-ms", "decode_base_ms", float),
    ("--decode-per-seq-ms", "decode_per_seq_ms", float),
    ("--max-batched-tokens", "max_batched_tokens", int),
    ("--max-num-seqs", "max_num_seqs", int),
    ("--rate-limit-requests-per-minute", "rate_limit_requests_per_minute", int),
    ("--rate-limit-tokens-per-minute", "rate_limit_tokens_per_minute", int),
    ("--api-key", "api_key", str),
    ("--output-tokens-mean", "output_tokens_mean", float),
    ("--output-tokens-sigma", "output_tokens_sigma", float),
    ("--ignore-eos", "ignore_eos", bool),
    ("--answers", "answers", str),
]
_FAULT_FLAGS: list[tuple[str, str, type]] = [
    ("--fail-status", "fail_status", int),
    ("--fail-count", "fail_count", int),
    ("--retry-after-s", "retry_after_s", float),
    ("--stall-before-first-byte-s", "stall_before_first_byte_s", float),
    ("--cut-stream-after-chunks", "cut_stream_after_chunks", int),
    ("--error-event-after-chunks", "error_event_after_chunks", int),
    ("--fault-seed", "seed", int),
    ("--cut-stream-rate", "cut_stream_rate", float),
    ("--malformed-tool-call-rate", "malformed_tool_call_rate", float),
    ("--loop-rate", "loop_rate", float),
    ("--truncate-context-tokens", "truncate_context_tokens", int),
    ("--substitute-model", "substitute_model", bool),
    ("--echo-request-headers", "echo_request_headers", bool),
    ("--latency-spike-rate", "latency_spike_rate", float),
    ("--latency-spike-s", "latency_spike_s", float),
    ("--error-burst-rate", "error_burst_rate", float),
    ("--error-burst-length", "error_burst_length", int),
    ("--error-burst-status", "error_burst_status", int),
    ("--stall-mid-stream-after-chunks", "stall_mid_stream_after_chunks", int),
    ("--stall-mid-stream-s", "stall_mid_stream_s", float),
    ("--omit-done", "omit_done", bool),
    ("--malformed-body", "malformed_body", bool),
    ("--flap-requests", "flap_requests", int),
    ("--flap-status", "flap_status", int),
]
_CHOICES = {"cost_model": ("linear", "batched"), "answers": ("filler", "oracle")}
DESCRIPTION = (
    "Run an emulated engine (or --fleet N of them) that serves the OpenAI, Anthropic and "
    "Gemini formats on one port: OpenAI's /chat/completions, /completions and /embeddings "
    "and Anthropic's /messages under http://HOST:PORT/v1 (the base_url of a kind "
    "openai-compatible or kind anthropic backend), Gemini's under http://HOST:PORT/v1beta "
    "(kind gemini)."
)


def parse(argv: list[str]) -> argparse.Namespace:
    """`switchyard emulate`'s arguments: its own parser, built when the command runs (the
    settings model it reads is not loaded for the rest of the CLI)."""
    parser = argparse.ArgumentParser(prog="switchyard emulate", description=DESCRIPTION)
    add_arguments(parser)
    return parser.parse_args(argv)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_address_arguments(parser)
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="NAME",
        help="model name to serve; repeatable (default: emulated-model)",
    )
    for flag, field, kind in _SETTING_FLAGS:
        info = EmulatorSettings.model_fields[field]
        help_text = f"{info.description} (default: {info.default})" if info.description else None
        _add_flag(parser, flag, field, kind, help_text or f"default: {info.default}")
    for flag, field, kind in _FAULT_FLAGS:
        info = Faults.model_fields[field]
        _add_flag(parser, flag, field, kind, f"{info.description} (default: {info.default})")


def _add_flag(
    parser: argparse.ArgumentParser, flag: str, field: str, kind: type, help_text: str
) -> None:
    if kind is bool:
        # A switch; None when absent, so the model's default applies.
        parser.add_argument(flag, dest=field, action="store_true", default=None, help=help_text)
    else:
        choices = _CHOICES.get(field)
        parser.add_argument(flag, dest=field, type=kind, choices=choices, help=help_text)


def _add_address_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="loopback address (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=9001,
        help="first engine's port, the next engines take the following ones; "
        "0 picks free ports (default: %(default)s)",
    )
    parser.add_argument(
        "--fleet",
        type=int,
        default=1,
        metavar="N",
        help="run N independent engines in this process (default: %(default)s)",
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
    """Serve until interrupted; prints one ready line with the base URL per engine."""
    import uvicorn  # imported by the command, not the parser: `switchyard --help` builds both

    from emulator.fleet import EmulatorFleet

    try:
        fleet = EmulatorFleet(args.fleet, settings_from_args(args), host=args.host, port=args.port)
    except ValueError as exc:
        print(f"switchyard emulate: {exc}", file=sys.stderr)
        return 2
    # This command owns the process: keep uvicorn to warnings, no line per request.
    for name in ("uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # A Config only for its choice of event loop (uvloop when installed); log_config=None
    # keeps it from configuring uvicorn's loggers, which would print every request.
    config = uvicorn.Config("emulator.app:create_app", log_config=None)
    loop_factory = config.get_loop_factory()
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(_serve(fleet))
    except KeyboardInterrupt:
        # Where signal handlers cannot be installed, Ctrl-C still ends us here.
        return 0


async def _serve(fleet: EmulatorFleet) -> int:
    try:
        await fleet.start()
    except OSError as exc:
        print(f"switchyard emulate: {exc}", file=sys.stderr)
        return 2
    for base_url in fleet.base_urls:
        print(f"emulator listening on {base_url}", flush=True)
    stopping = asyncio.Event()
    _on_stop_signals(stopping.set)
    try:
        await stopping.wait()
    finally:
        await fleet.stop()
    return 0


def _on_stop_signals(callback: Callable[[], None]) -> None:
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(number, callback)

"""One replica with settings the launcher does not offer: `python -m bench.quality_real.engine`.

It is `gateway.engines.replica_main` (the same `CommonParams`, lifecycle and exit codes)
plus what a degraded provider changes: the V cache's type (llama.cpp accepts a quantised V
cache only with flash attention, which `auto` turns on for CPU), flash attention itself,
and Jinja templating (off, a `--chat-template NAME` is one of llama.cpp's built-in
templates; on, llama.cpp takes the name as the template's source text).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gateway.engines import replica_main

FLASH_ATTN = {"auto": "AUTO", "on": "ENABLED", "off": "DISABLED"}


def extra_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--cache-type-v", choices=replica_main.KV_TYPES)
    parser.add_argument("--flash-attn", choices=sorted(FLASH_ATTN))
    parser.add_argument("--no-jinja", action="store_true")
    return parser


def with_extras(
    base: Callable[[argparse.Namespace], Any], extras: argparse.Namespace
) -> Callable[[argparse.Namespace], Any]:
    """`base` (replica_main's `server_params`), then the extra settings on its result."""

    def params(args: argparse.Namespace) -> Any:
        import xllamacpp

        result = base(args)
        if extras.cache_type_v:
            name = f"GGML_TYPE_{extras.cache_type_v.upper()}"
            result.cache_type_v = getattr(xllamacpp.ggml_type, name)
        if extras.flash_attn:
            name = f"LLAMA_FLASH_ATTN_TYPE_{FLASH_ATTN[extras.flash_attn]}"
            result.flash_attn_type = getattr(xllamacpp.llama_flash_attn_type, name)
        if extras.no_jinja:
            result.use_jinja = False
        return result

    return params


def main(argv: Sequence[str] | None = None) -> int:
    extras, rest = extra_parser().parse_known_args(argv)
    # This child process runs replica_main's own main, with its parameters extended.
    replica_main.server_params = with_extras(replica_main.server_params, extras)  # type: ignore[assignment]
    return replica_main.main(rest)


if __name__ == "__main__":
    sys.exit(main())

"""One emulated engine from a JSON settings document: `python -m bench.replay.engine_main`.

`switchyard emulate` has flags for the engine's speeds but not for a cloud's prompt cache;
the hybrid fleet's clouds need one, so this entry point takes the whole `EmulatorSettings`
as JSON and serves it on 127.0.0.1 until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from collections.abc import Sequence

from emulator.fleet import EmulatorFleet
from emulator.settings import EmulatorSettings


async def serve(settings: EmulatorSettings, port: int) -> None:
    """Serve one engine on 127.0.0.1:`port` until asked to stop."""
    fleet = EmulatorFleet(1, settings, host="127.0.0.1", port=port)
    await fleet.start()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(number, stopping.set)
    print(f"emulator listening on {fleet.base_urls[0]}", flush=True)
    try:
        await stopping.wait()
    finally:
        await fleet.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay.engine_main")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--settings-json", required=True, help="EmulatorSettings as JSON")
    args = parser.parse_args(argv)
    settings = EmulatorSettings.model_validate_json(args.settings_json)
    for name in ("uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    asyncio.run(serve(settings, args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

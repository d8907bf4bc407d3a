"""What inspecting responses for the quality scores costs: process CPU per request with
`quality.enabled` on and off, side by side, in alternating rounds. Client, gateway and
emulated engine share one process, so only the difference is meaningful.

    .venv/bin/python -m bench.studies.quality_overhead
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from emulator.loopback import LoopbackServer
from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings
from gateway.config.root import parse_config
from gateway.http.app import create_app

REQUESTS_PER_ROUND = 300
ROUNDS = 6
_PLUGINS = ["healthy-filter", "quality-filter", "round-robin-scorer", "max-score-picker"]


def _config(url: str, quality: bool) -> dict[str, Any]:
    return {
        "backends": [{"name": "e", "base_url": url, "models": ["m"]}],
        "routes": [{"name": "default", "model": "m", "backends": ["e"]}],
        "profiles": [{"name": "balanced", "plugins": [{"ref": ref} for ref in _PLUGINS]}],
        "health": {"active_probes": False},
        "quality": {"enabled": quality, "probes": {"enabled": False}},
    }


def _body(stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "default",
        "messages": [{"role": "user", "content": "hello there " * 50}],
        "max_tokens": 64,
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


async def _rounds(stream: bool) -> dict[bool, float]:
    """Process CPU seconds spent per setting (quality off / on)."""
    # The tap's cost per request depends on the answer's length: the same one every run.
    settings = EmulatorSettings(models=["m"], token_delay_ms=0.0, ignore_eos=True)
    engine = EmulatorServer(settings, port=0)
    await engine.start()
    gateways: dict[bool, LoopbackServer] = {}
    totals = {False: 0.0, True: 0.0}
    try:
        for quality in (False, True):
            config = parse_config(_config(engine.base_url, quality))
            gateways[quality] = LoopbackServer(
                create_app(config), lifespan="on", keep_alive_s=config.server.keep_alive_s
            )
            await gateways[quality].start()
        async with httpx.AsyncClient(timeout=30) as client:
            for index in range(ROUNDS):
                order = (False, True) if index % 2 == 0 else (True, False)
                for quality in order:
                    url = gateways[quality].url + "/v1/chat/completions"
                    started = time.process_time()
                    for _ in range(REQUESTS_PER_ROUND):
                        response = await client.post(url, json=_body(stream))
                        response.raise_for_status()
                    await asyncio.sleep(0.05)  # let deferred observations run in this round
                    totals[quality] += time.process_time() - started
    finally:
        for server in gateways.values():
            await server.stop()
        await engine.stop()
    return totals


def main() -> None:
    count = REQUESTS_PER_ROUND * ROUNDS
    for stream in (False, True):
        totals = asyncio.run(_rounds(stream))
        off, on = totals[False] / count * 1e6, totals[True] / count * 1e6
        print(
            f"stream={stream}: CPU per request off {off:.0f} us, on {on:.0f} us (+{on - off:.0f})"
        )


if __name__ == "__main__":
    main()

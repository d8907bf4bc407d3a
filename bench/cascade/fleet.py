"""The tiers and the gateway a cascade bench runs on: the small tier a real llama.cpp
replica (`switchyard engines`' launcher, SmolLM2) or an emulated one, the strong tier an
emulated cloud that answers right (`answers: oracle`: a stand-in for a frontier model,
documented as such), and the real gateway in process on loopback, its records kept."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from emulator.loopback import LoopbackServer
from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings
from gateway.config.root import parse_config
from gateway.engines.launcher import running_replicas
from gateway.engines.model_file import ensure_model
from gateway.http.app import create_app
from gateway.telemetry.record import RequestRecord

SmallTier = Literal["real", "emulated"]

STRONG_MODEL = "strong-model"
EMULATED_SMALL_MODEL = "small-model"
PRICES = {
    "small": {"input_usd_per_mtok": 0.25, "output_usd_per_mtok": 1.00},
    "strong": {"input_usd_per_mtok": 2.50, "output_usd_per_mtok": 10.00},
}
"""A local small model at a tenth of a frontier API's price (input and output), as the
issue frames it; the strong tier at GPT-4o-class list prices."""

STRUCTURAL_CHECKS: list[Any] = [
    "empty",
    "refusal",
    "loop",
    "cut_short",
    "response_format",
    {"check": "tool_calls", "params": {"expect_call": True}},
]
"""Checks of an answer's form; the workloads' tool requests all call for a tool."""


@dataclass
class Fleet:
    url: str
    small_model: str
    records: list[RequestRecord] = field(default_factory=list)


@contextlib.contextmanager
def small_engine(tier: SmallTier, ctx_size: int) -> Iterator[tuple[str, str, str] | None]:
    """(base_url, model, kind) of a real replica, or None for an emulated small tier."""
    if tier == "emulated":
        yield None
        return
    path = ensure_model()
    with running_replicas(1, path, ctx_size=ctx_size) as replicas:
        replica = replicas[0]
        yield replica.base_url, path.stem.lower(), "llama-cpp"


def emulated_small() -> EmulatorSettings:
    """A stand-in for a decent small model: right answers, with a share of them broken
    (loops, malformed tool calls), at a local engine's speed."""
    return EmulatorSettings(
        models=[EMULATED_SMALL_MODEL],
        answers="oracle",
        token_delay_ms=2.0,
        faults={"loop_rate": 0.15, "malformed_tool_call_rate": 0.25, "seed": 7},
    )


def strong_cloud() -> EmulatorSettings:
    return EmulatorSettings(
        models=[STRONG_MODEL], answers="oracle", base_latency_ms=300.0, token_delay_ms=15.0
    )


def gateway_config(
    small: tuple[str, str, str], strong_url: str, *, logprob_min: float, min_samples: float
) -> dict[str, Any]:
    small_url, small_model, small_kind = small
    structural = list(STRUCTURAL_CHECKS)
    with_logprob = [*structural, {"check": "logprob", "params": {"min_mean": logprob_min}}]
    learned = {"learned": True, "min_samples": min_samples, "explore": 0.05}
    return {
        "backends": [
            {
                "name": "small",
                "kind": small_kind,
                "base_url": small_url,
                "models": [small_model],
                "pricing": PRICES["small"],
                # No grammar on a real small tier: llama.cpp would constrain its output to
                # the schema; the cascade's checks are to catch what it writes unconstrained.
                "drop_params": ["response_format"] if small_kind == "llama-cpp" else [],
                "max_concurrency": 1,
                "timeouts": {"first_token_s": 120.0},
            },
            {
                "name": "strong",
                "base_url": strong_url,
                "models": [STRONG_MODEL],
                "pricing": PRICES["strong"],
            },
        ],
        "routes": [
            {"name": "small", "model": small_model, "backends": ["small"]},
            {"name": "strong", "model": STRONG_MODEL, "backends": ["strong"]},
        ],
        "cascades": [
            _cascade("cascade", structural, {"learned": False}),
            _cascade("cascade-logprob", with_logprob, {"learned": False}),
            _cascade("cascade-learned", structural, learned),
            {
                **_cascade("cascade-commit", structural, {"learned": False}),
                "streaming": {"mode": "commit"},
            },
        ],
        "health": {"active_probes": False},
        "quality": {"probes": {"enabled": False}},
        "telemetry": {"access_log": "off", "dashboard": False},
        "timeouts": {"total_s": 300.0, "first_token_s": 120.0},
    }


def _cascade(name: str, checks: list[Any], start: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "tiers": ["small", "strong"], "checks": checks, "start": start}


@contextlib.asynccontextmanager
async def running_fleet(
    tier: SmallTier, *, ctx_size: int = 2048, logprob_min: float = -0.5, min_samples: float = 4.0
) -> AsyncIterator[Fleet]:
    strong = EmulatorServer(strong_cloud(), host="127.0.0.1", port=0)
    emulated: EmulatorServer | None = None
    await strong.start()
    try:
        with small_engine(tier, ctx_size) as real:
            if real is None:
                emulated = EmulatorServer(emulated_small(), host="127.0.0.1", port=0)
                await emulated.start()
                real = (emulated.base_url, EMULATED_SMALL_MODEL, "openai-compatible")
            config = gateway_config(
                real, strong.base_url, logprob_min=logprob_min, min_samples=min_samples
            )
            app = create_app(parse_config(config, source="bench cascade (generated)"))
            server = LoopbackServer(app, lifespan="on")
            await server.start()
            fleet = Fleet(server.url, real[1])
            pipe = app.state.gateway.telemetry.pipe
            emit = pipe.emit

            def keep(record: Any) -> None:
                if isinstance(record, RequestRecord):
                    fleet.records.append(record)
                emit(record)

            pipe.emit = keep
            try:
                yield fleet
            finally:
                await server.stop()
    finally:
        if emulated is not None:
            await emulated.stop()
        await strong.stop()

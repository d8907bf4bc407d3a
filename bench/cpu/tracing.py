"""The tracing variants of `switchyard bench cpu`: the defaults with OpenTelemetry traces
on, at sample ratio 1.0 and 0.01, exporting over OTLP/HTTP (protobuf, the SDK's batch
thread in the gateway's process) to a real receiver on loopback (`bench.otlp_receiver`,
run in the load generator's process, on its cores), which decodes and counts every span:
the export's encoding and HTTP post count in the gateway's CPU, and a span the gateway
dropped shows as a missing count."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.otlp_receiver import OtlpReceiver

RATIOS = {"tracing-1.0": 1.0, "tracing-0.01": 0.01}
"""Each tracing variant's head-sampling ratio (the load sends no `traceparent`)."""
SPANS_PER_REQUEST = 3
"""A traced request's spans: the server span, the routing decision, one upstream attempt."""
EXPORT_DELAY_S = 6.0
"""Past the batch processor's 5 s schedule: every span ended so far has been exported."""
EXPORTER = "OTLP/HTTP protobuf to a receiver on loopback (bench/otlp_receiver.py)"


def installed() -> bool:
    """The `tracing` extra and the receiver's protobuf types are importable."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.proto")
    )


def service(ratio: float) -> str:
    """The `service.name` a variant's spans carry, so the receiver counts them apart."""
    return f"bench-cpu-tracing-{ratio:g}"


def section(ratio: float, endpoint: str) -> dict[str, Any]:
    """The `tracing:` section of a variant at `ratio` exporting to `endpoint`."""
    return {
        "enabled": True,
        "endpoint": endpoint,
        "sample_ratio": ratio,
        "service_name": service(ratio),
    }


async def start_receiver() -> OtlpReceiver:
    from bench.otlp_receiver import OtlpReceiver

    receiver = OtlpReceiver(keep=False)
    await receiver.start()
    return receiver


async def report(
    receiver: OtlpReceiver, variants: list[str], rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """What each tracing variant exported, once the SDK's batch delay has passed: spans
    received against what its measured requests (`rows`; warm-ups not counted, so a few
    more may come) would make if every one were sampled."""
    await asyncio.sleep(EXPORT_DELAY_S)
    requests: dict[str, int] = {}
    for row in rows:
        requests[row["variant"]] = requests.get(row["variant"], 0) + row["requests"]
    return {
        "exporter": EXPORTER,
        "variants": [
            {
                "variant": name,
                "sample_ratio": RATIOS[name],
                "spans_received": receiver.by_service[service(RATIOS[name])],
                "spans_if_all_sampled": requests.get(name, 0) * SPANS_PER_REQUEST,
            }
            for name in variants
            if name in RATIOS
        ],
    }


def render(tracing: dict[str, Any]) -> list[str]:
    lines = ["", f"Tracing variants export {tracing['exporter']}:", ""]
    lines += ["| variant | sample ratio | spans received | spans if every request were sampled |"]
    lines += ["|---|---:|---:|---:|"]
    lines += [
        f"| {row['variant']} | {row['sample_ratio']:g} | {row['spans_received']} | "
        f"{row['spans_if_all_sampled']} |"
        for row in tracing["variants"]
    ]
    return lines

"""Small constructors for the snapshots and backends the policy tests route over."""

from __future__ import annotations

from collections.abc import Iterable

from policies import BackendView, RequestInfo, Snapshot


def backend(
    name: str,
    *,
    models: Iterable[str] = ("m",),
    healthy: bool = True,
    in_flight: int = 0,
    max_concurrency: int = 64,
    health_reason: str = "",
) -> BackendView:
    return BackendView(
        name=name,
        kind="emulated",
        models=frozenset(models),
        healthy=healthy,
        in_flight=in_flight,
        max_concurrency=max_concurrency,
        health_reason=health_reason,
    )


def fleet(*names: str) -> list[BackendView]:
    return [backend(n) for n in names]


def snapshot(
    backends: Iterable[BackendView] = (),
    *,
    model: str = "m",
    session_key: str | None = None,
    seq: int = 0,
    rng_seed: int = 0,
    now_s: float = 1000.0,
) -> Snapshot:
    request = RequestInfo(
        route="route-a",
        model=model,
        endpoint="chat.completions",
        stream=False,
        session_key=session_key,
        seq=seq,
        rng_seed=rng_seed,
    )
    return Snapshot(request=request, backends={b.name: b for b in backends}, now_s=now_s)

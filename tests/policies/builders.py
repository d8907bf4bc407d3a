"""Small constructors for the snapshots and backends the policy tests route over."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from policies.snapshot import BackendView, Endpoint, QualityView, RequestInfo, Snapshot


def backend(
    name: str,
    *,
    models: Iterable[str] = ("m",),
    healthy: bool = True,
    in_flight: int = 0,
    max_concurrency: int = 64,
    health_reason: str = "",
    queued_prefill_tokens: int = 0,
    decoding: int = 0,
    prefill_tokens_per_s: float = 10_000.0,
    tpot_ms: float = 20.0,
    network_ms: float = 0.0,
    engine_running: int | None = None,
    engine_waiting: int | None = None,
    engine_kv_usage: float | None = None,
    context_window_tokens: int | None = None,
    tags: Iterable[str] = (),
    provider_tokens_left: int | None = None,
) -> BackendView:
    return BackendView(
        name=name,
        kind="emulated",
        models=frozenset(models),
        healthy=healthy,
        in_flight=in_flight,
        max_concurrency=max_concurrency,
        health_reason=health_reason,
        queued_prefill_tokens=queued_prefill_tokens,
        decoding=decoding,
        prefill_tokens_per_s=prefill_tokens_per_s,
        tpot_ms=tpot_ms,
        network_ms=network_ms,
        engine_running=engine_running,
        engine_waiting=engine_waiting,
        engine_kv_usage=engine_kv_usage,
        context_window_tokens=context_window_tokens,
        tags=frozenset(tags),
        provider_tokens_left=provider_tokens_left,
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
    prompt_tokens: int = 0,
    max_tokens: int | None = None,
    ttft_slo_ms: float | None = None,
    tpot_slo_ms: float | None = None,
    cached_tokens: Mapping[str, int] | None = None,
    quality: Mapping[str, QualityView] | None = None,
    endpoint: Endpoint = "chat.completions",
    member_models: Mapping[str, str] | None = None,
    required_tags: Iterable[str] = (),
) -> Snapshot:
    request = RequestInfo(
        route="route-a",
        model=model,
        endpoint=endpoint,
        stream=False,
        session_key=session_key,
        seq=seq,
        rng_seed=rng_seed,
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        ttft_slo_ms=ttft_slo_ms,
        tpot_slo_ms=tpot_slo_ms,
        member_models=dict(member_models or {}),
        required_tags=frozenset(required_tags),
    )
    return Snapshot(
        request=request,
        backends={b.name: b for b in backends},
        now_s=now_s,
        cached_tokens=dict(cached_tokens or {}),
        quality=dict(quality or {}),
    )

"""HTTP handlers besides the proxy: models, health, readiness, decisions, backends, state."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from gateway.errors import Forbidden, NotFound
from gateway.http.responses import json_response
from gateway.process.runtime import Runtime
from gateway.process.service import Gateway
from gateway.quality.report import quality_report

if TYPE_CHECKING:
    from gateway.discovery.refresh import Discovery

router = APIRouter()


def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


def discovery_status(request: Request) -> list[dict[str, Any]]:
    """Each discovering entry of the config as written: its query, backends, last answer
    and last error (`gateway.discovery.refresh`); empty without DNS discovery."""
    discovery: Discovery | None = getattr(request.app.state, "discovery", None)
    if discovery is None:
        return []
    runtime: Runtime = request.app.state.runtime
    return discovery.status(runtime.source)


def _model(route: str) -> dict[str, object]:
    """A route as an OpenAI model object: clients see public route names, never the
    upstream ids behind them."""
    return {"id": route, "object": "model", "created": 0, "owned_by": "switchyard"}


@router.get("/v1/models")
async def list_models(request: Request) -> Response:
    """The routes this key may use (all of them when auth is off)."""
    gateway = _gateway(request)
    caller = gateway.authorize(request.headers.get("authorization"))
    names = [n for n in gateway.router.routes if caller is None or caller.may_use(n)]
    data = [_model(name) for name in names]
    return json_response({"object": "list", "data": data})


@router.get("/v1/models/{model_id:path}")
async def get_model(request: Request, model_id: str) -> Response:
    """One route by name (ids may contain `/`, as `Qwen/Qwen2.5-7B-Instruct` does)."""
    gateway = _gateway(request)
    caller = gateway.authorize(request.headers.get("authorization"))
    name = gateway.router.route(model_id).name
    if caller is not None and not caller.may_use(name):
        raise Forbidden(f"this key may not use the model '{name}'", param="model")
    return json_response(_model(name))


@router.get("/healthz")
async def healthz() -> Response:
    return json_response({"status": "ok"})


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    """Prometheus exposition (no keys, prompts or text); behind `server.metrics_token_env`
    when that is set, else open like /readyz."""
    gateway = _gateway(request)
    gateway.tenancy.auth.metrics(request.headers.get("authorization"))
    exporter = gateway.telemetry.metrics
    if exporter is None:
        raise NotFound("Prometheus metrics are off (telemetry.prometheus: false)", code="not_found")
    # Rendering takes tens of milliseconds with many series (more with many workers' files).
    body, content_type = await asyncio.to_thread(exporter.render)
    return Response(body, 200, media_type=content_type)


@router.get("/readyz")
async def readyz(request: Request) -> Response:
    """Unauthenticated, for load balancers: counts only; details need a key. `degraded`
    names what is down while serving goes on (the store, Redis); it does not fail this."""
    gateway = _gateway(request)
    backends = gateway.state.describe()
    healthy = sum(1 for b in backends if b["healthy"])
    body = {
        "status": "ready" if healthy else "unavailable",
        "backends_healthy": healthy,
        "backends_total": len(backends),
        "degraded": gateway.degraded(),
    }
    return json_response(body, 200 if healthy else 503)


@router.get("/v1/switchyard/decisions/{decision_id}")
async def get_decision(request: Request, decision_id: str) -> Response:
    gateway = _gateway(request)
    gateway.tenancy.auth.operator(request.headers.get("authorization"))
    record = gateway.ring.get(decision_id)
    if record is None:
        raise NotFound(
            f"decision {decision_id!r} is unknown or has left the ring", code="not_found"
        )
    return json_response(record.to_dict())


@router.get("/v1/switchyard/backends")
async def get_backends(request: Request) -> Response:
    gateway = _gateway(request)
    gateway.tenancy.auth.operator(request.headers.get("authorization"))
    return json_response(
        {"backends": gateway.state.describe(), "discovery": discovery_status(request)}
    )


@router.get("/v1/switchyard/state")
async def get_state(request: Request) -> Response:
    gateway = _gateway(request)
    gateway.tenancy.auth.operator(request.headers.get("authorization"))
    fingerprints = gateway.router.fingerprinter
    return json_response(
        {
            **gateway.sync_status(),
            "tenancy": gateway.tenancy.status(),
            "prefix_index": gateway.router.index.describe(),
            "fingerprint_cache": {
                "entries": len(fingerprints),
                "hits": fingerprints.hits,
                "misses": fingerprints.misses,
            },
        }
    )


@router.get("/v1/switchyard/quality")
async def get_quality(request: Request, history: bool = False) -> Response:
    """Live quality per backend and model, the signals behind it, and the probes."""
    gateway = _gateway(request)
    gateway.tenancy.auth.operator(request.headers.get("authorization"))
    recorder = gateway.quality
    if recorder is None:
        return json_response({"enabled": False, "pairs": []})
    report = quality_report(recorder.book, gateway.prober, now=time.monotonic(), history=history)
    return json_response({"enabled": True, **report})


@router.post("/v1/messages/count_tokens")
async def count_tokens(request: Request) -> Response:
    """Anthropic's token count of a Messages request. Its module, and the Messages
    translation it shares with `/v1/messages`, load on the first call."""
    from gateway.http.anthropic_ingress.count_tokens import count_tokens as counted

    return await counted(request)

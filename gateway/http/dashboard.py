"""HTTP routes of the dashboard: its page, its static assets and its data.

The page, the assets and the shape of the data belong to `gateway.telemetry.dashboard`.
"""

from __future__ import annotations

import asyncio
import re
import time
from importlib import resources

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from gateway.errors import NotFound
from gateway.http.api import discovery_status
from gateway.http.responses import json_response
from gateway.process.service import Gateway
from gateway.telemetry.dashboard.data import dashboard_data

router = APIRouter()

_ASSET_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# The page and its assets are the same for everyone; their data needs a key when auth is on
# (an admin key when server.admin_keys_env is set).
_HEADERS = {
    "cache-control": "no-cache",
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'self'; img-src 'self' data:; "
    "style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
}


def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


def _asset(name: str) -> Response:
    suffix = name[name.rfind(".") :] if "." in name else ""
    media_type = _TYPES.get(suffix)
    file = resources.files("gateway.telemetry.dashboard") / "static" / name
    if media_type is None or not _ASSET_NAME.match(name) or not file.is_file():
        raise NotFound(f"no dashboard asset named {name!r}", code="not_found")
    return Response(file.read_bytes(), 200, _HEADERS, media_type)


@router.get("/dashboard")
async def dashboard_page(request: Request) -> Response:
    if _gateway(request).telemetry.series is None:
        raise NotFound("the dashboard is off (telemetry.dashboard: false)", code="not_found")
    return _asset("index.html")


@router.get("/dashboard/static/{name}")
async def dashboard_asset(name: str) -> Response:
    return _asset(name)


@router.get("/v1/switchyard/dashboard")
async def dashboard_json(
    request: Request, window_s: int = Query(900, ge=60, le=86_400)
) -> Response:
    gateway = _gateway(request)
    gateway.tenancy.auth.operator(request.headers.get("authorization"))
    series = gateway.telemetry.series
    if series is None:
        raise NotFound("the dashboard is off (telemetry.dashboard: false)", code="not_found")
    # Quantiles over every bucket take milliseconds: not on the loop that relays streams.
    snap = await asyncio.to_thread(series.snapshot, window_s)
    cascades = gateway.telemetry.cascades
    if cascades is not None:
        snap = {**snap, "cascades": cascades.snapshot(time.time(), snap["window_s"])}
    book = gateway.quality.book if gateway.quality is not None else None
    models = {b.name: list(b.models) for b in gateway.config.backends}
    data = dashboard_data(snap, gateway.telemetry, gateway.state.describe(), models, book)
    return json_response({**data, "discovery": discovery_status(request)})

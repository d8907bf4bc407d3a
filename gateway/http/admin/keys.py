"""The admin API: virtual keys created, listed, read, edited, rotated and revoked; a
listed or read key shows its spend in the current UTC day and month beside its budgets.

Every route needs an admin key (`server.admin_keys_env`). A new or rotated key is in the
answer once, as `key`; nothing else ever shows it. A change takes effect on this process
at once (its key cache reloads) and on other workers and replicas at their next reload.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from fastapi import APIRouter, Request
from pydantic import BaseModel, ValidationError
from starlette.responses import Response

if TYPE_CHECKING:
    from gateway.process.service import Gateway
    from gateway.store.keys import KeyRow
    from gateway.tenancy.key_admin import KeyAdmin

from gateway.errors import InvalidRequest, KeyStoreUnavailable, NotFound
from gateway.http.proxy import read_body
from gateway.http.responses import json_response
from gateway.tenancy.key_specs import KeyChanges, KeySpec, UnknownRoutes

router = APIRouter(prefix="/v1/switchyard/admin")

MAX_ADMIN_BODY_BYTES = 64 * 1024
ModelT = TypeVar("ModelT", bound=BaseModel)
T = TypeVar("T")


def _admin(request: Request) -> tuple[Gateway, KeyAdmin]:
    gateway: Gateway = request.app.state.gateway
    gateway.tenancy.auth.admin(request.headers.get("authorization"))
    admin = gateway.tenancy.admin
    if admin is None:
        raise NotFound("virtual keys are off (keys.enabled: false)", code="not_found")
    return gateway, admin


async def _body(request: Request, model: type[ModelT]) -> ModelT:
    raw = await read_body(request, MAX_ADMIN_BODY_BYTES)
    try:
        return model.model_validate(orjson.loads(raw or b"{}"))
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise InvalidRequest(f"{param}: {first['msg']}", param=param) from None


async def _refreshed(gateway: Gateway) -> None:
    if gateway.tenancy.cache is not None:
        await gateway.tenancy.cache.refresh()


def _missing(key_id: str) -> NotFound:
    return NotFound(f"no active key {key_id!r}", code="not_found")


async def _written(gateway: Gateway, admin: KeyAdmin, key_id: str, write: Awaitable[T | None]) -> T:
    """The result of a write to one active key, the key cache reloaded after it; None from
    the store means no such active key."""
    try:
        result = await write
    except admin.store_errors:
        raise KeyStoreUnavailable("the key store cannot be written") from None
    if result is None:
        raise _missing(key_id)
    await _refreshed(gateway)
    return result


def _with_secret(row: KeyRow, key: str) -> dict[str, Any]:
    return {**row.public(), "key": key}


async def _with_spend(gateway: Gateway, rows: list[KeyRow]) -> list[dict[str, Any]]:
    """Each key's public fields and `spend`: per UTC window, spent, limit and reset."""
    budgets = [(row.id, row.budget_usd_per_day, row.budget_usd_per_month) for row in rows]
    spend = await gateway.tenancy.budgets.key_spend(budgets)
    return [{**row.public(), "spend": spend[row.id]} for row in rows]


@router.get("/keys")
async def list_keys(request: Request, include_revoked: bool = False) -> Response:
    gateway, admin = _admin(request)
    try:
        rows = await admin.read(include_revoked=include_revoked)
    except admin.store_errors:
        raise KeyStoreUnavailable("the key store cannot be read") from None
    return json_response({"object": "list", "data": await _with_spend(gateway, rows)})


@router.post("/keys")
async def create_key(request: Request) -> Response:
    gateway, admin = _admin(request)
    spec = await _body(request, KeySpec)
    try:
        row, key = await admin.create(spec)
    except UnknownRoutes as exc:
        raise InvalidRequest(str(exc), param="routes") from None
    except admin.store_errors:
        raise KeyStoreUnavailable("the key store cannot be written") from None
    await _refreshed(gateway)
    return json_response(_with_secret(row, key), 201)


@router.get("/keys/{key_id}")
async def get_key(request: Request, key_id: str) -> Response:
    gateway, admin = _admin(request)
    try:
        row = await admin.get(key_id)
    except admin.store_errors:
        raise KeyStoreUnavailable("the key store cannot be read") from None
    if row is None:
        raise NotFound(f"no key {key_id!r}", code="not_found")
    (shown,) = await _with_spend(gateway, [row])
    return json_response(shown)


@router.patch("/keys/{key_id}")
async def change_key(request: Request, key_id: str) -> Response:
    gateway, admin = _admin(request)
    changes = await _body(request, KeyChanges)
    try:
        row = await _written(gateway, admin, key_id, admin.change(key_id, changes))
    except (UnknownRoutes, ValueError) as exc:
        raise InvalidRequest(str(exc)) from None
    return json_response(row.public())


@router.post("/keys/{key_id}/rotate")
async def rotate_key(request: Request, key_id: str) -> Response:
    gateway, admin = _admin(request)
    rotated = await _written(gateway, admin, key_id, admin.rotate(key_id))
    return json_response(_with_secret(*rotated))


@router.delete("/keys/{key_id}")
async def revoke_key(request: Request, key_id: str) -> Response:
    gateway, admin = _admin(request)
    row = await _written(gateway, admin, key_id, admin.revoke(key_id))
    return json_response(row.public())

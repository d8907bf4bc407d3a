"""The admin API's config reload: `POST /v1/switchyard/admin/reload`.

Behind an admin key, like the key admin API (`keys.py`). It reloads this process's config
file as SIGHUP does (docs/operations.md, "Reload"); with several workers, each reloads only
on its own request or on SIGHUP to the parent, which reaches every worker.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from gateway.errors import InvalidConfig
from gateway.http.responses import error_body, json_response
from gateway.process.runtime import Runtime
from gateway.process.service import Gateway

router = APIRouter(prefix="/v1/switchyard/admin")


@router.post("/reload")
async def reload_config(request: Request) -> Response:
    """Read the config file again and swap it in whole: the summary of what changed; 400
    with every problem when the file does not validate (the running config stays); 409
    when only a restart can apply it."""
    gateway: Gateway = request.app.state.gateway
    gateway.tenancy.auth.admin(request.headers.get("authorization"))
    runtime: Runtime = request.app.state.runtime
    try:
        result = await runtime.reload()
    except InvalidConfig as exc:
        body = error_body(exc)
        body["error"]["problems"] = exc.problems
        return json_response(body, exc.status)
    return json_response(result.as_dict())

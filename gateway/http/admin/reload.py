"""The admin API's config reload: `POST /v1/switchyard/admin/reload`.

Behind an admin key, like the key admin API (`keys.py`). It reloads the config file as
SIGHUP does (docs/operations.md, "Reload"): in a single process, that process; with
several workers, every worker, the one answering having validated the file once
(`gateway/process/worker_reloads.py`), and the answer says how many took it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from starlette.responses import Response

from gateway.errors import InvalidConfig, ReloadFailed
from gateway.http.responses import error_body, json_response
from gateway.process.runtime import Runtime
from gateway.process.service import Gateway

if TYPE_CHECKING:
    from gateway.process.worker_reloads import WorkerReloads

router = APIRouter(prefix="/v1/switchyard/admin")


@router.post("/reload")
async def reload_config(request: Request) -> Response:
    """Read the config file again and swap it in whole: the summary of what changed (and,
    with several workers, `workers`: how many took it); 400 with every problem when the
    file does not validate (the running config stays); 409 when only a restart can apply
    it; 500 when it would not start (with several workers: `error.workers` says which
    refused and why)."""
    gateway: Gateway = request.app.state.gateway
    gateway.tenancy.auth.admin(request.headers.get("authorization"))
    runtime: Runtime = request.app.state.runtime
    workers: WorkerReloads | None = request.app.state.worker_reloads
    try:
        if workers is None:
            return json_response((await runtime.reload()).as_dict())
        return json_response(await workers.reload_all(runtime))
    except InvalidConfig as exc:
        body = error_body(exc)
        body["error"]["problems"] = exc.problems
        return json_response(body, exc.status)
    except ReloadFailed as exc:
        body = error_body(exc)
        if exc.workers is not None:
            body["error"]["workers"] = exc.workers
        return json_response(body, exc.status)

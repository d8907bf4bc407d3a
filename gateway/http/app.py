"""The ASGI application: lifespan wiring and the one place errors become HTTP responses."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from prometheus_client import multiprocess
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gateway.config.root import Config
from gateway.errors import ClientError, ShuttingDown, SwitchyardError
from gateway.http.admin.keys import router as admin_router
from gateway.http.admin.reload import router as reload_router
from gateway.http.api import router
from gateway.http.client_guard import GUARD_STATE_KEY, ClientGuard
from gateway.http.dashboard import router as dashboard_router
from gateway.http.ingress import PROXY_PATHS, ProxyPath
from gateway.http.proxy import serve_proxy
from gateway.http.responses import error_response, json_response
from gateway.process.gc_tuning import tuned_collector
from gateway.process.runtime import Runtime
from gateway.process.service import start_gateway
from gateway.process.signals import handle_signals
from gateway.process.tasks import start_task

if TYPE_CHECKING:
    from gateway.discovery.refresh import Discovery
    from gateway.process.worker_reloads import WorkerReloads

logger = logging.getLogger("switchyard")


class SwitchyardApp:
    """The ASGI entry point. The OpenAI proxy endpoints go straight to their handlers;
    everything else (and lifespan) goes to the FastAPI app.

    The proxy path reads raw bytes and needs none of FastAPI's machinery; skipping its
    middleware stack saves about 80 µs of CPU per request and a wrapper call per SSE chunk.
    """

    def __init__(self, api: FastAPI) -> None:
        self.api = api
        self.state = api.state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = PROXY_PATHS.get(scope["path"]) if scope["type"] == "http" else None
        if path is None:
            if scope["type"] == "http" and scope["path"] == "/readyz" and self._draining():
                await _draining_readyz(self.state.runtime)(scope, receive, send)
                return
            await self.api(scope, receive, send)
        elif scope["method"] == "POST":
            await self._proxy(path, scope, receive, send)
        else:
            started = time.monotonic()
            error = ClientError(f"{scope['path']} only accepts POST", code="method_not_allowed")
            error.status = 405
            runtime: Runtime | None = getattr(self.state, "runtime", None)
            if runtime is not None:
                runtime.current.telemetry.refused(error, path.ingress, started)
            response = path.dialect.error_response(error, {"allow": "POST"})
            await response(scope, receive, send)

    def _draining(self) -> bool:
        runtime: Runtime | None = getattr(self.state, "runtime", None)
        return runtime is not None and runtime.draining

    async def _proxy(self, path: ProxyPath, scope: Scope, receive: Receive, send: Send) -> None:
        """One proxy request on the generation current when it starts, to its end."""
        runtime: Runtime = self.state.runtime
        if runtime.draining:
            refused = ShuttingDown("the gateway is shutting down; send the request elsewhere")
            runtime.current.telemetry.refused(refused, path.ingress, time.monotonic())
            await path.dialect.error_response(refused)(scope, receive, send)
            return
        with runtime.serving() as ticket:
            try:
                await serve_proxy(ticket.gateway, path, scope, receive, send)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not ticket.cut or task is None:
                    raise
                task.uncancel()
                ended = ShuttingDown("the gateway is shutting down; the request was ended")
                # RuntimeError: the answer had begun after all; nothing more can be sent.
                with suppress(RuntimeError):
                    await path.dialect.error_response(ended)(scope, receive, send)


def _draining_readyz(runtime: Runtime) -> Response:
    """503 while draining, whatever the backends' health: load balancers stop sending."""
    body = {"status": "draining", "reason": runtime.current.drain.reason}
    return json_response(body, 503)


def create_app(
    config: Config,
    *,
    reload_from: Callable[[], Config] | None = None,
    signals: bool = False,
    workers: WorkerReloads | None = None,
) -> SwitchyardApp:
    """`reload_from`: reads and validates the config file again (SIGHUP, the admin API's
    reload); None: this app cannot reload. `signals`: handle SIGHUP and drain on
    SIGTERM/SIGINT (a served process only, never a test's event loop). `workers`: this app
    is one of `serve --workers N`, whose reloads reach them all."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, object]]:
        async with AsyncExitStack() as stack:
            discovery = await _open_discovery(config)
            gateway = await start_gateway(discovery.expand(config) if discovery else config)
            guard = ClientGuard(config.server.clients, gateway.telemetry.connections)

            async def start_discovery() -> Discovery:
                """The first `discover` block came with a reload: the loop starts now."""
                from gateway.process.discovery_wiring import start_discovery

                app.state.discovery = started = start_discovery(runtime, stack)
                return started

            runtime = Runtime(
                gateway,
                load=reload_from,
                on_swap=lambda new: setattr(app.state, "gateway", new),
                discovery=(config, discovery) if discovery is not None else None,
                start_discovery=start_discovery if discovery is None else None,
            )
            stack.push_async_callback(_stop_worker, runtime)
            app.state.gateway = gateway
            app.state.runtime = runtime
            app.state.discovery = discovery
            if discovery is not None:
                from gateway.process.discovery_wiring import follow_discovery

                follow_discovery(discovery, runtime, stack)
            app.state.worker_reloads = workers
            if signals:
                on_hup = workers.on_hup if workers is not None else None
                stack.enter_context(handle_signals(runtime, asyncio.get_running_loop(), on_hup))
                server = config.server
                stack.enter_context(
                    tuned_collector(server.gc_gen0_threshold, freeze=server.gc_freeze)
                )
            if workers is not None:  # once SIGHUP is handled: counted in reloads from now
                stack.enter_context(workers.registered())
            if config.demo_traffic_on:
                from gateway.process.demo_traffic import run_demo  # and httpx: demo configs only

                routes = [route.name for route in config.routes]
                start_task(stack, run_demo(entry, config.demo, routes), name="demo-traffic")
            # The lifespan state reaches uvicorn's every connection: the bounded protocol
            # (gateway.http.bounded_protocol) finds the client bounds there.
            yield {GUARD_STATE_KEY: guard}

    app = FastAPI(
        title="Switchyard",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.include_router(router)
    app.include_router(dashboard_router)
    app.include_router(admin_router)
    app.include_router(reload_router)
    app.add_exception_handler(SwitchyardError, _on_switchyard_error)
    app.add_exception_handler(HTTPException, _on_http_exception)
    app.add_exception_handler(RequestValidationError, _on_invalid_parameters)
    app.add_exception_handler(Exception, _on_bug)
    entry = SwitchyardApp(app)
    return entry


async def _open_discovery(config: Config) -> Discovery | None:
    """The process's DNS discovery, its entries looked up once; None (and nothing of
    dnspython loaded) for a config without a `discover` block."""
    if all(backend.discover is None for backend in config.backends):
        return None
    from gateway.process.discovery_wiring import open_discovery

    return await open_discovery(config)


async def _stop_worker(runtime: Runtime) -> None:
    await runtime.close()
    metrics = runtime.current.telemetry.metrics
    if metrics is not None and metrics.multiprocess:
        # Live gauges (in flight, health) of a stopped worker must stop counting.
        multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]


async def _on_switchyard_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SwitchyardError)
    return error_response(exc)


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error = ClientError(str(exc.detail), code="not_found" if exc.status_code == 404 else None)
    error.status = exc.status_code
    return error_response(error, dict(exc.headers or {}))


async def _on_invalid_parameters(request: Request, exc: Exception) -> Response:
    """A bad query or path parameter on the gateway's own endpoints, OpenAI-shaped."""
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    first = errors[0] if errors else {}
    where = ".".join(str(part) for part in first.get("loc", ())[1:]) or None
    message = f"{where}: {first.get('msg', 'invalid value')}" if where else "invalid parameters"
    return error_response(ClientError(message, param=where))


async def _on_bug(request: Request, exc: Exception) -> Response:
    logger.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(SwitchyardError("internal error in the gateway"))

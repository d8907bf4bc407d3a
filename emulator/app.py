"""The emulator's ASGI app: OpenAI, Anthropic and Gemini endpoints, /emulator/* controls.

Every format is a front door to the same engine on the same port; only the paths (and,
for ``GET /v1/models``, Anthropic's headers) tell them apart.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict

import orjson
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.engine.metrics import prometheus_text
from emulator.engine.runtime_state import EmulatorRuntime
from emulator.inference_path import InferencePath
from emulator.settings import Faults
from emulator.timed_response import TimedResponse
from emulator.wire import anthropic_format, gemini_format
from emulator.wire.anthropic_format import VERSION_HEADER, AnthropicFormat
from emulator.wire.api_format import ApiFormat, Failure
from emulator.wire.gemini_format import GeminiFormat
from emulator.wire.openai_bodies import error_body
from emulator.wire.openai_format import OpenAIFormat

_JSON = "application/json"
_PROMETHEUS = "text/plain; version=0.0.4"

Endpoint = Callable[[Request], Awaitable[TimedResponse]]


def create_app(runtime: EmulatorRuntime) -> Starlette:
    """An ASGI app serving ``runtime``; the runtime is also at ``app.state.emulator``."""
    inference = InferencePath(runtime)
    endpoints = _Endpoints(runtime, inference)

    def serving(api: ApiFormat) -> Endpoint:
        async def endpoint(request: Request) -> TimedResponse:
            return await inference.generate(request, api)

        return endpoint

    gemini_model = "/v1beta/models/{model}"
    routes = [
        Route("/health", endpoints.health, methods=["GET"]),
        Route("/v1/models", endpoints.models, methods=["GET"]),
        Route("/v1/chat/completions", serving(OpenAIFormat(chat=True)), methods=["POST"]),
        Route("/v1/completions", serving(OpenAIFormat(chat=False)), methods=["POST"]),
        Route("/v1/embeddings", inference.embeddings, methods=["POST"]),
        Route("/v1/messages", serving(AnthropicFormat()), methods=["POST"]),
        Route("/v1beta/models", endpoints.gemini_models, methods=["GET"]),
        Route(
            gemini_model + ":generateContent",
            serving(GeminiFormat(streaming=False)),
            methods=["POST"],
        ),
        Route(
            gemini_model + ":streamGenerateContent",
            serving(GeminiFormat(streaming=True)),
            methods=["POST"],
        ),
        Route(gemini_model, endpoints.gemini_model, methods=["GET"]),
        Route("/emulator/faults", endpoints.get_faults, methods=["GET"]),
        Route("/emulator/faults", endpoints.put_faults, methods=["PUT"]),
        Route("/emulator/stats", endpoints.stats, methods=["GET"]),
        Route("/metrics", endpoints.metrics, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.emulator = runtime
    return app


class _Endpoints:
    """Everything but generation: health, model lists, controls and metrics."""

    def __init__(self, runtime: EmulatorRuntime, inference: InferencePath) -> None:
        self._runtime = runtime
        self._inference = inference
        self._openai = OpenAIFormat(chat=True)
        self._anthropic = AnthropicFormat()
        self._gemini = GeminiFormat(streaming=False)
        created = int(time.time())
        listing = [
            {"id": name, "object": "model", "created": created, "owned_by": "switchyard-emulator"}
            for name in runtime.settings.models
        ]
        self._models_body = orjson.dumps({"object": "list", "data": listing})

    async def health(self, request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type=_JSON)

    async def models(self, request: Request) -> Response:
        """OpenAI's list, or Anthropic's for a client that sends Anthropic's headers."""
        headers = request.headers
        if VERSION_HEADER in headers or "x-api-key" in headers:
            refused = self._refused(request, self._anthropic)
            if refused is not None:
                return refused
            models = self._runtime.settings.models
            body = anthropic_format.models_body(models, request.query_params)
            return Response(body, media_type=_JSON)
        refused = self._refused(request, self._openai)
        return refused or Response(self._models_body, media_type=_JSON)

    async def gemini_models(self, request: Request) -> Response:
        refused = self._refused(request, self._gemini)
        models = self._runtime.settings.models
        return refused or Response(gemini_format.models_body(models), media_type=_JSON)

    async def gemini_model(self, request: Request) -> Response:
        refused = self._refused(request, self._gemini)
        if refused is not None:
            return refused
        name = request.path_params["model"]
        if name not in self._runtime.settings.models:
            failure = Failure(404, f"models/{name} is not found for API version v1beta.")
            return self._failure(self._gemini, failure)
        return Response(orjson.dumps(gemini_format.model_resource(name)), media_type=_JSON)

    async def get_faults(self, request: Request) -> Response:
        return Response(self._runtime.faults.model_dump_json(), media_type=_JSON)

    async def put_faults(self, request: Request) -> Response:
        try:
            self._runtime.faults = Faults.model_validate_json(await request.body())
        except ValidationError as exc:
            body = error_body(str(exc), "invalid_request_error", None, None)
            return Response(body, status_code=400, media_type=_JSON)
        return await self.get_faults(request)

    async def stats(self, request: Request) -> Response:
        runtime = self._runtime
        injected = runtime.injector.counters.as_stats()
        numbers = {**asdict(runtime.stats), **runtime.snapshot().as_stats(), **injected}
        return Response(orjson.dumps(numbers), media_type=_JSON)

    async def metrics(self, request: Request) -> Response:
        return Response(prometheus_text(self._runtime.snapshot()), media_type=_PROMETHEUS)

    def _refused(self, request: Request, api: ApiFormat) -> Response | None:
        failure = self._inference.refusal(request, api)
        return None if failure is None else self._failure(api, failure)

    def _failure(self, api: ApiFormat, failure: Failure) -> Response:
        reply = api.error(failure)
        headers = {name.decode(): value.decode() for name, value in reply.headers}
        return Response(reply.body, failure.status, headers=headers)

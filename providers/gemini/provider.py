"""The `gemini` kind: Google's Gemini API spoken natively, behind the OpenAI contract.

Requests go to `models/{model}:generateContent` and `:streamGenerateContent?alt=sse`
with the key in the `x-goog-api-key` header (never in the URL, where logs and error
messages would carry it). The HTTP side is `providers/transport/http_transport.py`'s: its pooled
session, deadlines, stall watchdog and transport-error mapping; only the URLs, headers,
bodies and the reading of error statuses are Gemini's.
"""

from __future__ import annotations

import orjson

from providers.base import (
    Deadlines,
    HealthResult,
    UpstreamRequest,
    UpstreamResponse,
    upstream_headers,
)
from providers.errors import UnsupportedRequest
from providers.gemini.errors import GeminiErrors
from providers.gemini.request import GeminiCall, model_path, translate_request
from providers.gemini.response import chat_completion, decode_response
from providers.gemini.stream import GeminiStream, StreamTranslator
from providers.openai_chat_request import CHAT_PATH
from providers.settings import (
    DEFAULT_IDLE_KEEPALIVE_S,
    NATIVE_BASE_URLS,
    HttpClient,
    ProviderSettings,
)
from providers.transport.http_transport import HttpTransport, credentials_refused

DEFAULT_BASE_URL = NATIVE_BASE_URLS["gemini"]


async def open_gemini(settings: ProviderSettings) -> GeminiProvider:
    """The adapter for one Gemini backend; its connection pool opens on first use."""
    return GeminiProvider(
        settings.name,
        settings.base_url or DEFAULT_BASE_URL,
        settings.api_key,
        models=settings.models,
        max_connections=settings.max_connections,
        idle_keepalive_s=settings.idle_keepalive_s,
        http_client=settings.http_client,
        api_key_env=settings.api_key_env,
    )


class GeminiProvider:
    def __init__(
        self,
        name: str,
        base_url: str,
        api_key: str | None,
        *,
        models: tuple[str, ...] = (),
        max_connections: int = 256,
        idle_keepalive_s: float = DEFAULT_IDLE_KEEPALIVE_S,
        http_client: HttpClient = "lean",
        api_key_env: str | None = None,
    ) -> None:
        """`api_key_env`: the variable the key came from, which a refusal of it names."""
        self.name = name
        self.base_url = base_url.rstrip("/")
        self._models = models
        self._errors = GeminiErrors(name, api_key, api_key_env)
        self._http = HttpTransport(
            name,
            upstream_headers(None, {"x-goog-api-key": api_key} if api_key else None),
            self._errors.for_status,
            secret=api_key,
            max_connections=max_connections,
            idle_keepalive_s=idle_keepalive_s,
            http_client=http_client,
            provider_url=DEFAULT_BASE_URL,
        )

    async def send(self, request: UpstreamRequest, deadlines: Deadlines) -> UpstreamResponse:
        call = self._translate(request)
        response = await self._http.send(
            self._url(call.generate()), call.body, deadlines, request.headers
        )
        if response.status != 200:
            raise self._errors.malformed(f"HTTP {response.status} instead of an answer")
        try:
            answer = decode_response(response.body)
        except ValueError:
            raise self._errors.malformed("an unreadable answer") from None
        completion = orjson.dumps(chat_completion(answer, call.model))
        return UpstreamResponse(200, "application/json", completion, response.rate_limit)

    async def open_stream(self, request: UpstreamRequest, deadlines: Deadlines) -> GeminiStream:
        call = self._translate(request)
        raw = await self._http.open_stream(
            self._url(call.stream()), call.body, deadlines, request.headers
        )
        translator = StreamTranslator(call.model, call.include_usage, self._errors)
        return await GeminiStream(raw, translator).opened()

    async def health(self, timeout_s: float) -> HealthResult:
        """GET the first model's description (or the model list): checks the key too."""
        path = f"/{model_path(self._models[0])}" if self._models else "/models"
        return await self._http.probe(self.base_url + path, timeout_s, _health_of)

    async def close(self) -> None:
        await self._http.close()

    def _translate(self, request: UpstreamRequest) -> GeminiCall:
        if request.path != CHAT_PATH:
            raise UnsupportedRequest(
                f"backend {self.name} (Gemini) serves only {CHAT_PATH}, not {request.path}",
                code="unsupported_endpoint",
            )
        return translate_request(request.body)

    def _url(self, upstream: UpstreamRequest) -> str:
        return self.base_url + upstream.path


def _health_of(status: int) -> HealthResult:
    if status == 200:
        return HealthResult(True, "probe ok (HTTP 200)")
    if status == 429:
        # Rate limited is up: the 429s themselves cool the backend down per request.
        return HealthResult(True, "probe rate limited (HTTP 429)")
    if status in (400, 401, 403):
        # A bad key is a 400 from Gemini (API_KEY_INVALID), and a probe asks nothing else.
        return credentials_refused(status)
    if status == 404:
        return HealthResult(False, "probe found no such model (HTTP 404)")
    return HealthResult(False, f"probe got HTTP {status}")

"""Adapter for OpenAI-compatible servers: vLLM, SGLang, llama.cpp, Ollama's /v1, clouds.

Requests and answers pass as they are; the HTTP side (pooled session, deadlines, stall
watchdog, transport errors, rate-limit headers) is `providers/transport/http_transport.py`'s. Where
each engine or cloud serves and what it probes are its preset's (`providers/presets.py`),
filled into the settings by the host before opening.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

from providers.base import (
    Deadlines,
    HealthResult,
    UpstreamRequest,
    UpstreamResponse,
    upstream_headers,
)
from providers.errors import (
    KeySource,
    UpstreamCredentialsRefused,
    UpstreamError,
    UpstreamStatusError,
    openai_error_object,
)
from providers.presets import provider_base_url
from providers.settings import DEFAULT_IDLE_KEEPALIVE_S, HttpClient, ProviderSettings
from providers.transport.http_stream import HttpStream
from providers.transport.http_transport import (
    CREDENTIAL_STATUSES,
    HealthJudge,
    HttpTransport,
    check_json_answer,
    credentials_refused,
)
from providers.transport.http_transport import StatusErrorMapper as StatusErrorMapper  # re-exported

if TYPE_CHECKING:
    import aiohttp

_MAX_SAID_CHARS = 500


async def open_openai_compatible(settings: ProviderSettings) -> OpenAICompatibleProvider:
    """The adapter for `settings.base_url`; its connection pool opens on first use."""
    return OpenAICompatibleProvider.from_settings(settings)


class OpenAICompatibleProvider:
    def __init__(
        self,
        name: str,
        base_url: str,
        api_key: str | None,
        *,
        max_connections: int = 256,
        idle_keepalive_s: float = DEFAULT_IDLE_KEEPALIVE_S,
        http_client: HttpClient = "lean",
        headers: Mapping[str, str] | None = None,
        status_error: StatusErrorMapper | None = None,
        health_url: str | None = None,
        health_judge: HealthJudge | None = None,
        api_key_env: str | None = None,
        provider_url: str | None = None,
    ) -> None:
        """`headers` replace the bearer-token headers, for clouds that take the key in a
        header of their own; `api_key` is then only scrubbed from error bodies.
        `api_key_env`: the variable the key came from, which a refusal of it names.
        `health_url` is what the probe GETs (None: the model list, `{base_url}/models`),
        `health_judge` what its status means (None: `openai_health`). `provider_url`: the
        cloud's own base URL, which a 404's message suggests (`UpstreamNotFound`)."""
        self.name = name
        self.base_url = base_url.rstrip("/")
        self._health_url = health_url
        self._health_judge = health_judge or openai_health
        self._key = KeySource.of(api_key, api_key_env)
        self._http = HttpTransport(
            name,
            headers if headers is not None else upstream_headers(api_key),
            status_error or self._openai_status_error,
            secret=api_key,
            max_connections=max_connections,
            idle_keepalive_s=idle_keepalive_s,
            http_client=http_client,
            provider_url=provider_url,
        )

    @classmethod
    def from_settings(cls, settings: ProviderSettings, **options: Any) -> Self:
        """The adapter for `settings.base_url` (its preset filled in); `options` are the
        constructor's own for a kind that needs them (`health_judge`)."""
        if settings.base_url is None:
            raise ValueError(
                f"backend {settings.name}: an OpenAI-compatible adapter needs base_url"
            )
        return cls(
            settings.name,
            settings.base_url,
            settings.api_key,
            max_connections=settings.max_connections,
            idle_keepalive_s=settings.idle_keepalive_s,
            http_client=settings.http_client,
            headers=upstream_headers(settings.api_key, settings.extra_headers),
            health_url=settings.health_url,
            api_key_env=settings.api_key_env,
            provider_url=provider_base_url(settings.kind, settings.preset),
            **options,
        )

    @property
    def session(self) -> aiohttp.ClientSession:
        return self._http.session

    async def send(self, request: UpstreamRequest, deadlines: Deadlines) -> UpstreamResponse:
        """The whole answer, relayed as it is; one that says it is JSON and is not fails
        here, before the client sees a byte of it, so the next candidate may answer."""
        response = await self._http.send(
            self.request_url(request), request.body, deadlines, request.headers
        )
        return check_json_answer(response, self.name)

    async def open_stream(self, request: UpstreamRequest, deadlines: Deadlines) -> HttpStream:
        """The stream past its first bytes. One that opens with an error event has sent
        nothing of an answer: that fails here, before the client sees it, so the next
        candidate may answer (the event is not quoted: it may echo the request's key)."""
        url = self.request_url(request)
        stream = await self._http.open_stream(url, request.body, deadlines, request.headers)
        if opens_with_error_event(stream.first_chunk):
            await stream.aclose()
            raise UpstreamError(
                f"backend {self.name} opened its stream with an error event",
                backend=self.name,
                code="upstream_stream_error",
            )
        return stream

    async def health(self, timeout_s: float) -> HealthResult:
        # Unlike the API calls, the probe follows redirects, as it always has.
        return await self._http.probe(
            self.health_url(), timeout_s, self._health_judge, allow_redirects=True
        )

    async def close(self) -> None:
        await self._http.close()

    def request_url(self, request: UpstreamRequest) -> str:
        """Where `request` goes; a cloud that addresses its deployments otherwise overrides it."""
        return self.base_url + request.path

    def health_url(self) -> str:
        return self._health_url or self.base_url + "/models"

    def _openai_status_error(
        self, status: int, body: bytes, retry_after_s: float | None
    ) -> UpstreamStatusError:
        if status in CREDENTIAL_STATUSES:
            # The gateway's own key, not the client's: the upstream body may quote it.
            return UpstreamCredentialsRefused(
                backend=self.name, upstream_status=status, key=self._key
            )
        return UpstreamStatusError(
            f"backend {self.name} answered HTTP {status}",
            backend=self.name,
            upstream_status=status,
            upstream_body=body,
            retry_after_s=retry_after_s,
            said=_said(body),
        )


def _said(body: bytes) -> str | None:
    """The message of an OpenAI-shaped error body, cut short; None for any other body."""
    error = openai_error_object(body)
    message = error.get("message") if error is not None else None
    return message[:_MAX_SAID_CHARS] if isinstance(message, str) and message else None


def opens_with_error_event(first_chunk: bytes) -> bool:
    """Whether an OpenAI stream's first event is an error (`data: {"error": ...}`)."""
    head = first_chunk.lstrip()
    return head.startswith(b"data:") and head[5:].lstrip().startswith(b'{"error"')


def openai_health(status: int) -> HealthResult:
    # Any other answer means the server is up: an engine without the probed path (404)
    # still serves, and a rate-limited cloud (429) cools down per request instead.
    if status in CREDENTIAL_STATUSES:
        return credentials_refused(status)
    if status >= 500:
        return HealthResult(False, f"probe got HTTP {status}")
    return HealthResult(True, f"probe ok (HTTP {status})")

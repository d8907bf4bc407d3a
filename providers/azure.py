"""The `azure-openai` kind: Azure OpenAI, OpenAI's wire at Azure's addresses.

Bodies, streams and errors are OpenAI's, so this is the OpenAI-compatible adapter with
two differences: a request goes to its deployment,
`{base_url}/openai/deployments/{deployment}{path}?api-version=...`, and the key travels
in an `api-key` header rather than as a bearer token. The deployment is the request's
`model`: the gateway has already put the backend's own model id there, so a backend
lists its deployment names as its models.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

import orjson

from providers.base import UpstreamRequest, upstream_headers
from providers.errors import MissingDeployment
from providers.openai_compatible import OpenAICompatibleProvider
from providers.settings import DEFAULT_IDLE_KEEPALIVE_S, HttpClient, ProviderSettings

DEFAULT_API_VERSION = "2024-10-21"
"""The newest generally available data-plane version when this adapter was written."""


async def open_azure_openai(settings: ProviderSettings) -> AzureOpenAIProvider:
    """The adapter for one Azure OpenAI resource; its connection pool opens on first use."""
    if settings.base_url is None:
        raise ValueError(
            f"backend {settings.name}: an Azure OpenAI adapter needs base_url, "
            "e.g. https://<resource>.openai.azure.com"
        )
    return AzureOpenAIProvider(
        settings.name,
        settings.base_url,
        settings.api_key,
        api_version=settings.api_version or DEFAULT_API_VERSION,
        max_connections=settings.max_connections,
        idle_keepalive_s=settings.idle_keepalive_s,
        http_client=settings.http_client,
        api_key_env=settings.api_key_env,
    )


class AzureOpenAIProvider(OpenAICompatibleProvider):
    def __init__(
        self,
        name: str,
        base_url: str,
        api_key: str | None,
        *,
        api_version: str = DEFAULT_API_VERSION,
        max_connections: int = 256,
        idle_keepalive_s: float = DEFAULT_IDLE_KEEPALIVE_S,
        http_client: HttpClient = "lean",
        api_key_env: str | None = None,
    ) -> None:
        # A resource URL is accepted with or without the /openai that every path starts with.
        super().__init__(
            name,
            base_url.rstrip("/").removesuffix("/openai"),
            api_key,
            max_connections=max_connections,
            idle_keepalive_s=idle_keepalive_s,
            http_client=http_client,
            headers=upstream_headers(None, {"api-key": api_key} if api_key else None),
            api_key_env=api_key_env,
        )
        self._query = urlencode({"api-version": api_version})

    def request_url(self, request: UpstreamRequest) -> str:
        deployment = quote(_deployment_of(request.body), safe="")
        return f"{self.base_url}/openai/deployments/{deployment}{request.path}?{self._query}"

    def health_url(self) -> str:
        return f"{self.base_url}/openai/models?{self._query}"


def _deployment_of(body: bytes) -> str:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, str) or not model:
        raise MissingDeployment("an Azure OpenAI request needs a model: its deployment name")
    return model

"""The proxy's paths: which client API each one is, the endpoint it is routed as, and the
`Dialect` that reads it.

OpenAI's own paths are routed as they come; `/v1/messages` (Anthropic's Messages API) and
`/v1/responses` (OpenAI's Responses API) are read by their dialect into a chat request and
routed as `chat.completions`. Records and metrics name the API the client called
(`ingress`); routing and dispatch see only the endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gateway.http.anthropic_ingress.messages_dialect import MESSAGES
from gateway.http.dialect import OPENAI, Dialect
from gateway.http.responses_ingress.responses_dialect import RESPONSES
from gateway.telemetry.record import ClientEndpoint
from policies.snapshot import Endpoint


@dataclass(frozen=True, slots=True)
class ProxyPath:
    ingress: ClientEndpoint
    """The API the client called, as records and metrics name it."""
    endpoint: Endpoint
    """What the gateway routes and forwards, whatever the client's format."""
    dialect: Dialect


PROXY_PATHS: Mapping[str, ProxyPath] = MappingProxyType(
    {
        "/v1/chat/completions": ProxyPath("chat.completions", "chat.completions", OPENAI),
        "/v1/completions": ProxyPath("completions", "completions", OPENAI),
        "/v1/embeddings": ProxyPath("embeddings", "embeddings", OPENAI),
        "/v1/messages": ProxyPath("messages", "chat.completions", MESSAGES),
        "/v1/responses": ProxyPath("responses", "chat.completions", RESPONSES),
    }
)
"""Every path the proxy serves (POST only)."""

INGRESSES: Mapping[ClientEndpoint, ProxyPath] = MappingProxyType(
    {path.ingress: path for path in PROXY_PATHS.values()}
)
"""The same paths by the API they serve: how `switchyard explain` reads a request body."""

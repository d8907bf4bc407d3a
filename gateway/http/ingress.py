"""The proxy's paths: which client API each one is, the endpoint it is routed as, and the
`Dialect` that reads it.

OpenAI's own paths are routed as they come; `/v1/messages` (Anthropic's Messages API) and
`/v1/responses` (OpenAI's Responses API) are read by their dialect into a chat request and
routed as `chat.completions`. Records and metrics name the API the client called
(`ingress`); routing and dispatch see only the endpoint. A translating dialect's package is
imported when its path is first called: a gateway whose clients speak only OpenAI's API
never loads the Messages or Responses translation.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, cast

from gateway.http.dialect import OPENAI, Dialect

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gateway.telemetry.record import ClientEndpoint
    from policies.snapshot import Endpoint

_OPENAI = "gateway.http.dialect:OPENAI"
_LOADED: dict[str, Dialect] = {_OPENAI: OPENAI}
"""Dialects imported so far, by reference (one per translating ingress at most)."""


@dataclass(frozen=True, slots=True)
class ProxyPath:
    ingress: ClientEndpoint
    """The API the client called, as records and metrics name it."""
    endpoint: Endpoint
    """What the gateway routes and forwards, whatever the client's format."""
    dialect_ref: str
    """`module:name` of the path's `Dialect`, imported on first use."""

    @property
    def dialect(self) -> Dialect:
        """The `Dialect` that reads this path's requests and shapes its answers."""
        loaded = _LOADED.get(self.dialect_ref)
        if loaded is None:
            module, _, name = self.dialect_ref.partition(":")
            loaded = cast(Dialect, getattr(importlib.import_module(module), name))
            _LOADED[self.dialect_ref] = loaded
        return loaded


PROXY_PATHS: Mapping[str, ProxyPath] = MappingProxyType(
    {
        "/v1/chat/completions": ProxyPath("chat.completions", "chat.completions", _OPENAI),
        "/v1/completions": ProxyPath("completions", "completions", _OPENAI),
        "/v1/embeddings": ProxyPath("embeddings", "embeddings", _OPENAI),
        "/v1/messages": ProxyPath(
            "messages",
            "chat.completions",
            "gateway.http.anthropic_ingress.messages_dialect:MESSAGES",
        ),
        "/v1/responses": ProxyPath(
            "responses",
            "chat.completions",
            "gateway.http.responses_ingress.responses_dialect:RESPONSES",
        ),
    }
)
"""Every path the proxy serves (POST only)."""

INGRESSES: Mapping[ClientEndpoint, ProxyPath] = MappingProxyType(
    {path.ingress: path for path in PROXY_PATHS.values()}
)
"""The same paths by the API they serve: how `switchyard explain` reads a request body."""

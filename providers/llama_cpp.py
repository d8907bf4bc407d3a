"""The `llama-cpp` kind: llama.cpp's llama-server, through the OpenAI-compatible adapter,
reading what that server says of its own readiness.

llama-server answers every path (`/health`, `/slots`, `/v1/...`) with a 503 while it
loads its model: `{"error": {"message": "Loading model", "type": "unavailable_error",
"code": 503}}`. That is an engine not ready yet, not a failing one: the probe reports it
as not ready, and a request that meets it raises `UpstreamNotReady`, which the host keeps
apart from the failures that eject a backend. Its cache hits and timings are read with
every other usage (`providers/usage.py`); its `/slots` and `/props` by the host's scrape.
"""

from __future__ import annotations

import orjson

from providers.base import HealthResult
from providers.errors import UpstreamNotReady, UpstreamStatusError
from providers.openai_compatible import OpenAICompatibleProvider, openai_health
from providers.settings import ProviderSettings

NOT_READY_STATUS = 503
_UNAVAILABLE = "unavailable_error"
_LOADING = "Loading model"


async def open_llama_cpp(settings: ProviderSettings) -> LlamaCppProvider:
    """The adapter for the llama-server at `settings.base_url` (its preset filled in)."""
    return LlamaCppProvider.from_settings(settings, health_judge=llama_cpp_health)


class LlamaCppProvider(OpenAICompatibleProvider):
    """The OpenAI-compatible adapter whose 503 `unavailable_error` is `UpstreamNotReady`."""

    def _openai_status_error(
        self, status: int, body: bytes, retry_after_s: float | None
    ) -> UpstreamStatusError:
        reason = not_ready_reason(status, body)
        if reason is not None:
            return UpstreamNotReady(reason, backend=self.name, upstream_status=status)
        return super()._openai_status_error(status, body, retry_after_s)


def llama_cpp_health(status: int) -> HealthResult:
    """`/health` answers 503 only while the model loads: not ready, not down."""
    if status == NOT_READY_STATUS:
        return HealthResult(False, f"not ready: loading the model (HTTP {status})")
    return openai_health(status)


def not_ready_reason(status: int, body: bytes) -> str | None:
    """Why an error answer means "not ready yet", or None for any other error."""
    if status != NOT_READY_STATUS:
        return None
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    if not isinstance(error, dict) or error.get("type") != _UNAVAILABLE:
        return None
    return "loading the model" if error.get("message") == _LOADING else "unavailable"

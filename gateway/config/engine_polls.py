"""How the gateway polls an engine of its own accord, off the request path: its Prometheus
`/metrics` (`metrics`) and llama-server's `/slots` and `/props` (`llama_cpp`)."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from gateway.config.strict import StrictConfig


class PollTiming(StrictConfig):
    """How often a background poll of an engine runs, how long one may take and how long
    its reading counts: shared by the `/metrics` scrape and llama-server's polls."""

    interval_s: float = Field(1.0, ge=0.05, description="Time between two polls.")
    timeout_s: float = Field(0.5, gt=0, description="Each poll whole: connect, status, body.")
    stale_after_s: float = Field(
        5.0, gt=0, description="A reading older than this is ignored by policies."
    )
    max_body_bytes: int = Field(1024 * 1024, ge=1024, description="A larger answer fails it.")

    @model_validator(mode="after")
    def _check_timing(self) -> Self:
        if self.stale_after_s < 2 * self.interval_s:
            raise ValueError("stale_after_s: must be at least twice interval_s")
        if self.timeout_s > self.stale_after_s:
            raise ValueError("timeout_s: must not exceed stale_after_s")
        return self


class MetricsConfig(PollTiming):
    """Polling the engine's Prometheus endpoint for its own running/waiting/KV numbers."""

    enabled: bool = True
    url: str | None = Field(
        None, pattern=r"^https?://", description="Full URL; default: base_url's origin + path."
    )
    path: str = Field("/metrics", pattern=r"^/", description="Used when url is not set.")

    @model_validator(mode="after")
    def _check_address(self) -> MetricsConfig:
        if self.url is not None and "path" in self.model_fields_set:
            raise ValueError("path: set url or path, not both")
        return self

    @property
    def explicit(self) -> bool:
        """Whether the address was given, not derived from the backend's kind."""
        return self.url is not None or "path" in self.model_fields_set


class LlamaCppConfig(PollTiming):
    """kind llama-cpp: what the gateway reads of llama-server itself, from its own task
    (`gateway/fleet/scrape/llama_cpp_scrape.py`), never on the request path: `/slots` every
    `interval_s`, `/props` when the context window is unknown."""

    slots: bool = Field(
        True, description="Poll /slots: its busy slots are the engine's running requests."
    )
    props: bool = Field(
        True,
        description="Read /props for the context window per slot when "
        "context_window_tokens is unset (a configured one wins).",
    )

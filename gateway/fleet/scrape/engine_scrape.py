"""Polling engines' Prometheus `/metrics` in the background, for the load the policies read.

Nothing here is on the request path. One task scrapes every backend whose `metrics` is
enabled, each every `interval_s`, with a deadline of `timeout_s` for the whole scrape and
a cap of `max_body_bytes`. A reading goes to FleetState, whose views show it to policies
until it is `stale_after_s` old.

What is requested is only the configured URL, or the backend's own origin plus
`metrics.path`. The session, the bounds, the loop and the logging of failures are the
shared poller's (`poller.py`): vLLM, SGLang and llama.cpp serve `/metrics` without the
API key, so none is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from gateway.config.backends import BackendConfig
from gateway.config.engine_polls import MetricsConfig
from gateway.fleet.scrape.engine_metrics import EngineLoad, parse_engine_load
from gateway.fleet.scrape.poller import Poller


@dataclass(frozen=True, slots=True)
class ScrapeTarget:
    backend: str
    url: str
    models: tuple[str, ...]
    config: MetricsConfig


def metrics_url(backend: BackendConfig, base_url: str) -> str:
    """`metrics.url`, else the origin of the backend's base URL plus `metrics.path`."""
    metrics = backend.metrics or MetricsConfig()
    if metrics.url is not None:
        return metrics.url
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, metrics.path, "", ""))


def scrape_targets(
    backends: Iterable[BackendConfig], base_urls: Mapping[str, str]
) -> list[ScrapeTarget]:
    """A target per backend with metrics enabled; `base_urls` holds each backend's
    provider's `base_url` (an emulated engine's is known only once it has started)."""
    return [
        ScrapeTarget(b.name, metrics_url(b, base_urls[b.name]), tuple(b.models), b.metrics)
        for b in backends
        if b.metrics is not None and b.metrics.enabled
    ]


class EngineScraper(Poller[ScrapeTarget]):
    """Scrapes every target on its own interval; see the module doc. `poll_once` is the
    unit: fetch, parse, record, log."""

    task_name = "engine-metrics"
    label = "engine metrics"
    verb = "scraping"
    failing_means = "its engine load is ignored once stale, "
    logger = logging.getLogger("switchyard.engine_metrics")
    accept = "text/plain;version=0.0.4;q=1.0, */*;q=0.1"

    async def poll_once(self, target: ScrapeTarget) -> EngineLoad | None:
        """Scrape one target and record the outcome; never raises a scrape failure."""

        def parse(body: bytes) -> EngineLoad | None:
            return parse_engine_load(body.decode("utf-8", errors="replace"), target.models)

        load, error = await self.read(
            target, target.url, parse, "no known engine metrics in the response"
        )
        self._state.record_engine_load(target.backend, load, error)
        self.note(target, target.url, error)
        return load

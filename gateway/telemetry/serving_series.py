"""Gauges name a backend or a route only while the serving config has it.

A reload that removes a backend or a route ends its gauge series (health, requests in
flight, quality, queue depth). In one process they are removed from the registry
(`forget`). With several workers each worker's values live in its own files, which cannot
forget one series, so what a scrape aggregates from them is filtered instead
(`ServingOnly`): every worker has taken the reload by then, and the worker answering the
scrape knows the config it serves. Counters and histograms keep their totals: they are
cumulative, and Prometheus' `rate()` needs them not to reset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

    from prometheus_client import Gauge
    from prometheus_client.metrics import MetricWrapperBase
    from prometheus_client.metrics_core import Metric


@dataclass(frozen=True, slots=True)
class Serving:
    """The serving config's backend and route names."""

    backends: frozenset[str]
    routes: frozenset[str]

    def has(self, labels: Mapping[str, str]) -> bool:
        """Whether a series with these labels names only what the config serves."""
        backend, route = labels.get("backend"), labels.get("route")
        return (backend is None or backend in self.backends) and (
            route is None or route in self.routes
        )


DISCOVERED_MARK = "@"
"""Only a backend DNS discovery made has it in its name (`vllm@10.1.2.3:8000`): an entry's
name may not contain it (`gateway.discovery.expand.backend_name`)."""


def discovered_gone(labels: Mapping[str, str], serving: Serving) -> bool:
    """Whether a series names a discovered backend the config no longer serves. Its
    counters and histograms go too: unlike a written backend's, such names come and go
    with the DNS (a pod's IP), and kept they would grow without bound."""
    backend = labels.get("backend")
    return backend is not None and DISCOVERED_MARK in backend and backend not in serving.backends


def forget_discovered(metric: MetricWrapperBase, serving: Serving) -> None:
    """Remove `metric`'s series (of any type) naming a discovered backend gone from
    `serving` (one process's registry)."""
    names = metric._labelnames
    if "backend" not in names:
        return
    keys = {
        tuple(sample.labels[name] for name in names)
        for family in metric.collect()
        for sample in family.samples
        if discovered_gone(sample.labels, serving)
    }
    for key in keys:
        metric.remove(*key)


def forget(gauge: Gauge, labelnames: Sequence[str], serving: Serving) -> None:
    """Remove `gauge`'s series naming a backend or route `serving` lacks (one process's
    registry: `remove` cannot reach the files of several workers)."""
    for family in gauge.collect():
        for sample in family.samples:
            if not serving.has(sample.labels):
                gauge.remove(*(sample.labels[name] for name in labelnames))


class _Collector(Protocol):
    def collect(self) -> Iterable[Metric]: ...


class ServingOnly:
    """A collector: `inner`'s metrics without the gauge samples naming a backend or route
    the serving config lacks (`serving()`; None: all of them)."""

    def __init__(self, inner: _Collector, serving: Callable[[], Serving | None]) -> None:
        self._inner = inner
        self._serving = serving

    def collect(self) -> Iterator[Metric]:
        serving = self._serving()
        for metric in self._inner.collect():
            if serving is not None and metric.type == "gauge":
                metric.samples = [s for s in metric.samples if serving.has(s.labels)]
            elif serving is not None:
                metric.samples = [
                    s for s in metric.samples if not discovered_gone(s.labels, serving)
                ]
            yield metric

"""Gauges name a backend or a route only while the serving config has it.

A reload that removes a backend or a route ends its gauge series (health, requests in
flight, quality, queue depth). In one process they are removed from the registry
(`forget`). With several workers each worker's values live in its own files, which cannot
forget one series, so what a scrape aggregates from them is filtered instead
(`ServingOnly`): every worker has taken the reload by then, and the worker answering the
scrape knows the config it serves. Counters and histograms keep their totals: they are
cumulative, and Prometheus' `rate()` needs them not to reset; except a discovered
backend's (`DISCOVERED_MARK` in its name) once it is gone: such names come and go with
the DNS, and kept they would grow without bound (`sweep`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Protocol

from prometheus_client.metrics import MetricWrapperBase

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

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


def forget(
    metric: MetricWrapperBase,
    serving: Serving,
    gone: Callable[[Mapping[str, str]], bool] | None = None,
) -> None:
    """Remove `metric`'s series that `gone` picks from its labels, by default those naming
    a backend or route `serving` lacks (one process's registry: `remove` cannot reach the
    files of several workers)."""
    picked = gone or (lambda labels: not serving.has(labels))
    names = metric._labelnames
    keys = {
        tuple(sample.labels[name] for name in names)
        for family in metric.collect()
        for sample in family.samples
        if picked(sample.labels)
    }
    for key in keys:
        metric.remove(*key)


def sweep(metrics: Iterable[object], gauges: Iterable[MetricWrapperBase], serving: Serving) -> None:
    """After a config change, in one process's registry: every series of `metrics` that
    names a discovered backend no longer served, and every series of `gauges` naming
    anything `serving` lacks."""
    gone = partial(discovered_gone, serving=serving)
    for metric in metrics:
        if isinstance(metric, MetricWrapperBase) and "backend" in metric._labelnames:
            forget(metric, serving, gone)
    for gauge in gauges:
        forget(gauge, serving)


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

"""Reading an engine's own load (running, waiting, KV usage) from its Prometheus `/metrics`.

Engines count every request they serve, including traffic that never passed through this
gateway; the gateway's own counters cannot. Recognised names (first present wins):

- running: `vllm:num_requests_running`, `sglang:num_running_reqs`,
  `llamacpp:requests_processing`;
- waiting: `vllm:num_requests_waiting`, `sglang:num_queue_reqs`, `llamacpp:requests_deferred`;
- KV usage (0..1): `vllm:kv_cache_usage_perc` (newer), `vllm:gpu_cache_usage_perc`,
  `sglang:token_usage`, `llamacpp:kv_cache_usage_ratio` (older llama-servers only: a
  current one exports `requests_processing` and `requests_deferred` but no KV usage).

A body with none of them is no data, not an error. Parsing is pure and only looks at
lines that start with one of these names, so a large exposition costs little.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass

RUNNING = ("vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing")
WAITING = ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred")
KV_USAGE = (
    "vllm:kv_cache_usage_perc",  # the newer name; some versions export both
    "vllm:gpu_cache_usage_perc",
    "sglang:token_usage",
    "llamacpp:kv_cache_usage_ratio",
)
_WANTED = frozenset((*RUNNING, *WAITING, *KV_USAGE))
_FAMILIES = {"vllm:": "vllm", "sglang:": "sglang", "llamacpp:": "llama.cpp"}
_MODEL_LABEL = "model_name"


@dataclass(frozen=True, slots=True)
class EngineLoad:
    """One scrape's reading; a field the engine did not export is None."""

    family: str
    """Which naming was recognised: `vllm`, `sglang` or `llama.cpp`."""
    running: int | None
    waiting: int | None
    kv_usage: float | None
    """Fraction (0..1) of the KV cache in use, as the engine defines it."""


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float


def parse_engine_load(text: str, models: Collection[str] = ()) -> EngineLoad | None:
    """The engine load in a Prometheus text exposition, or None if no known metric is in it.

    Several series of one metric (data-parallel ranks, engines, models) are summed for the
    counts; for KV usage the fullest is taken, since a ratio does not add up. When series
    carry a `model_name` label and some of them name one of `models`, only those count.
    """
    by_name: dict[str, list[Sample]] = {}
    for sample in samples(text, _WANTED):
        if math.isfinite(sample.value):
            by_name.setdefault(sample.name, []).append(sample)
    if not by_name:
        return None
    running_name, running = _first(by_name, RUNNING, models)
    waiting_name, waiting = _first(by_name, WAITING, models)
    kv_name, kv = _first(by_name, KV_USAGE, models)
    family = _family(running_name or waiting_name or kv_name)
    return EngineLoad(
        family=family,
        running=_count(running),
        waiting=_count(waiting),
        kv_usage=min(1.0, max(0.0, max(kv))) if kv else None,
    )


def _first(
    by_name: Mapping[str, list[Sample]], names: tuple[str, ...], models: Collection[str]
) -> tuple[str, list[float]]:
    for name in names:
        found = by_name.get(name)
        if found:
            return name, [s.value for s in _for_models(found, models)]
    return "", []


def _for_models(found: list[Sample], models: Collection[str]) -> list[Sample]:
    mine = [s for s in found if s.labels.get(_MODEL_LABEL) in models]
    return mine or found


def _count(values: list[float]) -> int | None:
    return max(0, round(sum(values))) if values else None


def _family(name: str) -> str:
    return next(family for prefix, family in _FAMILIES.items() if name.startswith(prefix))


def samples(text: str, names: Collection[str] | None = None) -> Iterator[Sample]:
    """Every sample line of a Prometheus text exposition (0.0.4, or OpenMetrics), optionally
    only those of `names`. Comments and lines that do not parse are skipped."""
    # A cheap prefix test first: most of an engine's exposition is histograms we skip.
    prefixes = tuple(names) if names is not None else None
    for line in text.splitlines():
        if prefixes is not None and not line.startswith(prefixes):
            continue
        if not line or line[0] == "#":
            continue
        sample = parse_line(line)
        if sample is not None and (names is None or sample.name in names):
            yield sample


def parse_line(line: str) -> Sample | None:
    """One `name{label="value",...} value [timestamp]` line, or None if malformed."""
    line = line.strip()
    cut = len(line)
    for i, char in enumerate(line):
        if char == "{" or char.isspace():
            cut = i
            break
    name, rest = line[:cut], line[cut:]
    if not name:
        return None
    labels: dict[str, str] = {}
    if rest.startswith("{"):
        parsed = _parse_labels(rest)
        if parsed is None:
            return None
        labels, rest = parsed
    fields = rest.split()
    if not fields:
        return None
    try:
        value = float(fields[0])
    except ValueError:
        return None
    return Sample(name, labels, value)


def _parse_labels(text: str) -> tuple[dict[str, str], str] | None:
    """`{a="x",b="y\\"z"}` at the start of `text`: the labels and what follows the brace."""
    labels: dict[str, str] = {}
    i, end = 1, len(text)
    while True:
        while i < end and text[i] in " ,":
            i += 1
        if i >= end:
            return None
        if text[i] == "}":
            return labels, text[i + 1 :]
        eq = text.find("=", i)
        if eq < 0 or eq + 1 >= end or text[eq + 1] != '"':
            return None
        parsed = _quoted(text, eq + 2)
        if parsed is None:
            return None
        value, after = parsed
        labels[text[i:eq].strip()] = value
        i = after


_ESCAPES = {"n": "\n", '"': '"', "\\": "\\"}


def _quoted(text: str, start: int) -> tuple[str, int] | None:
    """The label value starting after its opening quote, and the index after its closing one."""
    out: list[str] = []
    i = start
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(out), i + 1
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(char)
        i += 1
    return None

"""Per priority class and per tenant measures of one replay: who was served well, who shed.

The measures are the overall ones restricted to a group: goodput counts a request good
only when it succeeded within both SLOs, so a shed or failed request counts against its
group; TTFT is over the group's successful requests. A shed is any HTTP 429: the gateway
refusing for admission (`request_shed`, `queue_full`, `deadline_unmeetable`) or for a
rate or spend limit; `shed_codes` tells them apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .metrics import Slo, spread, ttft_ms
from .schedule import RequestResult
from .trace import TraceRequest

SHED_STATUS = 429
NO_LABEL = "(none)"
"""The group of requests without the field, when others have it."""

Labeller = Callable[[TraceRequest], str | None]


def is_shed(result: RequestResult) -> bool:
    return result.status == SHED_STATUS


def group_measures(results: Sequence[RequestResult], slo: Slo, scale: float) -> dict[str, Any]:
    """One group's row; latencies in trace-time ms (wall ms / `scale`), as the overall ones.
    `queue_ms_*` are None when the gateway reported no queue wait."""
    succeeded = sum(1 for r in results if r.ok)
    shed = [r for r in results if is_shed(r)]
    good = sum(1 for r in results if slo.met_by(r, scale))
    ttft = [v for v in (ttft_ms(r, scale) for r in results) if v is not None]
    queue = [r.queue_ms / scale for r in results if r.queue_ms is not None]
    return {
        "requests": len(results),
        "succeeded": succeeded,
        "shed": len(shed),
        "failed": len(results) - succeeded - len(shed),
        "goodput_ratio": round(good / len(results), 4) if results else None,
        **spread("ttft_ms", ttft, (50, 90, 99)),
        **spread("queue_ms", queue, (50, 99)),
        "shed_codes": _counts(r.error_code or NO_LABEL for r in shed),
        "admission": _counts(r.admission for r in results if r.admission is not None),
    }


def breakdowns(
    results: Sequence[RequestResult], requests: Sequence[TraceRequest], slo: Slo, scale: float
) -> dict[str, dict[str, dict[str, Any]]]:
    """`by_class` and `by_tenant`: group name -> `group_measures`, names sorted; each is
    empty when no request carries that field."""
    by_id = {r.id: r for r in requests}
    sent = [(by_id[r.request_id], r) for r in results if r.request_id in by_id]
    return {
        "by_class": _grouped(sent, lambda r: r.priority, slo, scale),
        "by_tenant": _grouped(sent, lambda r: r.tenant, slo, scale),
    }


def _grouped(
    sent: Sequence[tuple[TraceRequest, RequestResult]], label: Labeller, slo: Slo, scale: float
) -> dict[str, dict[str, Any]]:
    if all(label(request) is None for request, _ in sent):
        return {}
    groups: dict[str, list[RequestResult]] = {}
    for request, result in sent:
        groups.setdefault(label(request) or NO_LABEL, []).append(result)
    return {name: group_measures(groups[name], slo, scale) for name in sorted(groups)}


def _counts(words: Iterable[str]) -> dict[str, int]:
    return dict(Counter(words).most_common())

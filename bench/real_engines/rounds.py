"""Several rounds of every policy, pooled: a policy's rounds read as one longer replay.

The machine's load drifts while policies run one after another; running them in rounds
that alternate the order (A B C, then C B A, ...) gives each policy its share of quiet and
busy minutes, and pooling the rounds gives one row per policy. A round's request ids get
the suffix `@N` (round N, from 1 on), so follow-ups still find their own round's parent;
its times are moved to start where the previous round ended.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from bench.replay.schedule import ReplayRun, RequestResult
from bench.replay.trace import TraceRequest

from .engine_counters import Counters
from .runner import PolicyRun


def round_orders(names: Sequence[str], rounds: int) -> list[list[str]]:
    """The policies of each round: as given, then reversed, alternately."""
    return [list(names) if i % 2 == 0 else list(reversed(names)) for i in range(rounds)]


def _suffix(request_id: str, round_index: int) -> str:
    return request_id if round_index == 0 else f"{request_id}@{round_index}"


def pooled_requests(requests: Sequence[TraceRequest], rounds: int) -> list[TraceRequest]:
    """The trace's requests once per round, ids (and parents) suffixed as the runs are."""
    out: list[TraceRequest] = []
    for i in range(rounds):
        for request in requests:
            parent = None if request.parent is None else _suffix(request.parent, i)
            out.append(dataclasses.replace(request, id=_suffix(request.id, i), parent=parent))
    return out


def pool(runs: Sequence[PolicyRun]) -> PolicyRun:
    """One policy's rounds as one run: results back to back, counters and decisions merged."""
    if len(runs) == 1:
        return runs[0]
    first = runs[0].run
    results: list[RequestResult] = []
    clock = first.started_at
    for i, measured in enumerate(runs):
        run = measured.run
        shift = clock - run.started_at
        for result in run.results:
            results.append(_moved(result, shift, i))
        clock += max((r.done_at for r in run.results), default=run.finished_at) - run.started_at
    return PolicyRun(
        run=ReplayRun(tuple(results), first.started_at, clock, first.time_scale),
        replicas=runs[0].replicas,
        counters=_summed_counters(r.counters for r in runs),
        decisions={k: v for r in runs for k, v in r.decisions.items()},
    )


def _moved(result: RequestResult, shift: float, round_index: int) -> RequestResult:
    first = result.first_token_at
    return dataclasses.replace(
        result,
        request_id=_suffix(result.request_id, round_index),
        sent_at=result.sent_at + shift,
        done_at=result.done_at + shift,
        due_at=result.due_at + shift,
        first_token_at=None if first is None else first + shift,
    )


def _summed_counters(
    each_round: Iterable[dict[str, Counters | None]],
) -> dict[str, Counters | None]:
    """Each replica's counters summed over the rounds; None if any round lacks them."""
    total: dict[str, Counters | None] = {}
    for counters in each_round:
        for replica, reading in counters.items():
            if replica in total and total[replica] is None:
                continue
            if reading is None:
                total[replica] = None
                continue
            kept = total.get(replica) or {}
            total[replica] = {n: kept.get(n, 0.0) + v for n, v in reading.items()}
    return total

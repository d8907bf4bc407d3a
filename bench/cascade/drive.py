"""Sending a workload through one policy (a route or a cascade, by its model name) and
keeping, per request, where it was answered, whether it is right, whether it passes the
checks, what every attempt cost and how long the client waited."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from bench.cascade.fleet import PRICES, STRUCTURAL_CHECKS, Fleet
from bench.workloads.cascade.grading import answer_of
from gateway.cascade.answer import answer_of as checked_answer
from gateway.cascade.answer import check_request
from gateway.cascade.config import CheckConfig
from gateway.cascade.logprobs import body_logprobs
from gateway.cascade.verdict import CascadeChecks
from gateway.quality.signals.collect import collect_body

if TYPE_CHECKING:
    from bench.workloads.cascade.records import CascadeRequest
    from gateway.telemetry.record import RequestRecord


@dataclass
class Outcome:
    """One request as the bench saw it."""

    id: str
    kind: str
    policy: str
    status: int
    tier: str
    """The route that answered (`small`, `strong`), or `error`."""
    correct: bool
    passes: bool
    """The final answer passes the structural checks (the cascade's, judged here for the
    routes' answers; the cascade's own verdict for its answers)."""
    escalated: bool
    cost_usd: float
    latency_s: float
    mean_logprob: float | None = None
    """The answer's mean token log-probability, when the client asked for them."""
    start_tier: int = 0
    verdict: str | None = None
    """A cascade's `x-switchyard-cascade-checks` header (None for a route's answer)."""


def structural_checks() -> CascadeChecks:
    """The cascades' structural checks, to judge the routes' answers the same way."""
    return CascadeChecks([CheckConfig.model_validate(_declared(c)) for c in STRUCTURAL_CHECKS])


def _declared(check: Any) -> dict[str, Any]:
    return {"check": check} if isinstance(check, str) else check


async def send_all(
    fleet: Fleet,
    policy: str,
    workload: list[CascadeRequest],
    *,
    logprobs: bool = False,
    timeout_s: float = 300.0,
) -> list[Outcome]:
    """Each request in turn (one at a time: the small tier has one slot)."""
    checks = structural_checks()
    out: list[Outcome] = []
    async with httpx.AsyncClient(base_url=fleet.url, timeout=timeout_s) as client:
        for request in workload:
            body = {**request.body, "model": policy}
            if logprobs:
                body["logprobs"] = True
            seen = len(fleet.records)
            started = time.perf_counter()
            response = await client.post("/v1/chat/completions", json=body)
            latency = time.perf_counter() - started
            out.append(_outcome(fleet, request, policy, response, latency, seen, checks))
    return out


def _outcome(
    fleet: Fleet,
    request: CascadeRequest,
    policy: str,
    response: httpx.Response,
    latency_s: float,
    seen: int,
    checks: CascadeChecks,
) -> Outcome:
    records = fleet.records[seen:]
    cost = sum(record_cost(r) for r in records)
    if response.status_code != 200:
        return Outcome(
            request.id,
            request.kind,
            policy,
            response.status_code,
            "error",
            False,
            False,
            bool(records),
            cost,
            latency_s,
        )
    document = response.json()
    answer = answer_of(document)
    tier = response.headers.get("x-switchyard-cascade-tier") or _route_of(records)
    verdict = response.headers.get("x-switchyard-cascade-checks")
    if verdict is None:  # a route's answer: judged here by the same checks
        collected = collect_body(response.content, document=document)
        passes = checks.judge(check_request(request.body), checked_answer(collected)).passed
    else:
        passes = verdict in ("passed", "committed")
    notes = [r.cascade for r in records if r.cascade is not None]
    return Outcome(
        request.id,
        request.kind,
        policy,
        200,
        tier,
        request.grade(answer),
        passes,
        "x-switchyard-cascade-escalated" in response.headers,
        cost,
        latency_s,
        mean_logprob=_mean_logprob(document),
        start_tier=notes[0].start_tier if notes else 0,
        verdict=verdict,
    )


def record_cost(record: RequestRecord) -> float:
    """What an attempt cost at the bench's prices (its backend's, from its usage)."""
    usage, prices = record.usage, PRICES.get(record.backend or "")
    if usage is None or prices is None:
        return 0.0
    return (
        usage.prompt_tokens * prices["input_usd_per_mtok"]
        + usage.completion_tokens * prices["output_usd_per_mtok"]
    ) / 1e6


def _route_of(records: list[RequestRecord]) -> str:
    return records[-1].route if records else "error"


def _mean_logprob(document: dict[str, Any]) -> float | None:
    values = body_logprobs(document)  # the gateway's own reader of an answer's logprobs
    return sum(values) / len(values) if values else None


async def first_tokens(
    fleet: Fleet, policy: str, workload: list[CascadeRequest], *, timeout_s: float = 300.0
) -> list[float]:
    """Streamed, one at a time: seconds from sending to the first content byte."""
    found: list[float] = []
    async with httpx.AsyncClient(base_url=fleet.url, timeout=timeout_s) as client:
        for request in workload:
            body = {**request.body, "model": policy, "stream": True}
            started = time.perf_counter()
            first: float | None = None
            async with client.stream("POST", "/v1/chat/completions", json=body) as response:
                async for line in response.aiter_lines():
                    has_text = '"content":"' in line and '"content":""' not in line
                    if first is None and line.startswith("data: {") and has_text:
                        first = time.perf_counter() - started
            if first is not None:
                found.append(first)
    return found

"""What each part of the request path costs on its own, in-process: µs per call.

The live variants of `bench.cpu` give each part's cost in a serving process (caches,
the collector and the event loop included); these calls, timed alone on one request and
its answer, show which functions inside a part take it. Best of several repeats of many
calls each (thread CPU time), so a busy machine inflates them less.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson

from gateway.config.root import Config
from gateway.fleet.state import FleetState
from gateway.http.wire import parse_body, traits_of
from gateway.prefix.fingerprint import Fingerprinter
from gateway.prefix.token_count import TokenCounter
from gateway.quality.book.quality_book import QualityBook
from gateway.quality.signals.collect import collect_body, observation_fields
from gateway.quality.signals.observation import Observation
from gateway.quality.signals.passive import QualityRecorder, request_context
from gateway.quality.signals.rules import evaluate
from gateway.routing.router import Router
from policies.profiles import build_pipelines
from policies.snapshot import Endpoint
from providers.usage import usage_from_body

ENDPOINT: Endpoint = "chat.completions"


def per_call_us(call: Callable[[], object], *, calls: int = 2000, repeats: int = 5) -> float:
    """Best of `repeats` runs of `calls` calls, in µs of this thread's CPU per call."""
    for _ in range(calls // 10):
        call()
    best = float("inf")
    for _ in range(repeats):
        started = time.thread_time()
        for _ in range(calls):
            call()
        best = min(best, (time.thread_time() - started) / calls)
    return best * 1e6


def measure(
    config: Config, route: str, simple_route: str | None, raw: bytes, answer: bytes
) -> list[tuple[str, float]]:
    """(part, µs per call) for one request body `raw` and one answer body `answer`."""
    state = FleetState(config.backends, config.health)
    book = QualityBook(config.quality)
    router = Router(config, state, build_pipelines(config.policies, config.profiles), quality=book)
    body, head = parse_body(raw, ENDPOINT)
    traits = traits_of(ENDPOINT, body, head, {})
    fingerprinter = Fingerprinter(TokenCounter())
    messages = body["messages"]
    document = orjson.loads(answer)
    recorder = QualityRecorder(book)
    context = request_context(
        route, body, max_tokens=traits.max_tokens, prompt_tokens=12, ttft_target_ms=None,
        tpot_target_ms=None,
    )  # fmt: skip
    collected = collect_body(answer, document=document)
    observation = Observation(
        backend=config.backends[0].name, model=route, at=0.0, outcome="ok",
        **observation_fields(collected),
    )  # fmt: skip
    backend = observation.backend
    parts: list[tuple[str, Callable[[], Any]]] = [
        ("parse the request (JSON, head, traits)", lambda: _parse(raw)),
        (
            "fingerprint and count tokens (cached chain)",
            lambda: fingerprinter.chat(route, messages),
        ),
        ("decide: cache-aware profile", lambda: router.plan(router.route(route), traits)),
    ]
    if simple_route is not None:
        simple = router.route(simple_route)
        parts.append(
            ("decide: healthy, least-load, max-score", lambda: router.plan(simple, traits))
        )
    parts += [
        ("usage from the answer (parsed once)", lambda: usage_from_body(answer, document)),
        ("quality: the answer's facts", lambda: collect_body(answer, document=document)),
        ("quality: signals", lambda: evaluate(observation, recorder.params)),
        ("quality: signals and the book", lambda: recorder.response(context, backend, collected)),
    ]
    return [(name, round(per_call_us(call), 2)) for name, call in parts]


def _parse(raw: bytes) -> object:
    body, head = parse_body(raw, ENDPOINT)
    return traits_of(ENDPOINT, body, head, {})

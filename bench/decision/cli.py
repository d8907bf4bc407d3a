"""Routing decision time: `Router.decide` on the cache-aware profile, 16 backends, 8K/128K prompts.

Usage: python -m bench.decision [--prompt-tokens 8192,131072] [--json FILE]
   or: switchyard bench decision [same options]

Times the gateway's real decision path in-process: prompt fingerprint (rendering, block
hashing, token counting), prefix-index match, fleet snapshot, the profile's filters,
scorers and picker. Bodies are parsed as the gateway parses them (orjson, then the request
model) before each timed decision, so every string is a fresh object as in production.

Cases, per prompt size:
  follow-up turns   conversations growing turn by turn, interleaved; each request is the
                    previous one plus the reply and a new question, and is remembered on
                    the chosen backend as dispatch does (the index holds many blocks)
  all turns         the same requests plus each conversation's first one
  cold              a never-seen prompt each time: no cached message, no cached prefix
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.decision.report import Sample, render, summarize
from bench.decision.workload import (
    PROFILE,
    ConversationFactory,
    chars_per_token,
    chat_body,
    fleet_config,
)
from bench.overhead.cli import machine
from gateway.admission.config import FlowControlConfig
from gateway.admission.controller import Admission
from gateway.config.root import Config, RouteConfig
from gateway.fleet.saturation import SaturationConfig
from gateway.fleet.state import FleetState
from gateway.http.wire import parse_body, traits_of
from gateway.prefix.fingerprint import Fingerprint, Fingerprinter
from gateway.prefix.token_count import TokenCounter
from gateway.quality.book.quality_book import QualityBook
from gateway.routing.decisions import DecisionRecord
from gateway.routing.router import Leg, RequestTraits, RoutePlan, Router
from policies.profiles import build_pipelines
from policies.snapshot import Endpoint

ENDPOINT: Endpoint = "chat.completions"
_ROOMY = SaturationConfig(max_queued_prefill_ms=1e12, max_engine_waiting=10**9)
"""No simulated load fills a backend: every request finds room (the empty-queue path)."""


class TimedFingerprinter(Fingerprinter):
    """The router's fingerprinter, also keeping how long its last chat fingerprint took."""

    last_ns = 0

    def chat(self, salt: str, messages: Sequence[Any], tools: Any = None) -> Fingerprint:
        started = time.perf_counter_ns()
        found = super().chat(salt, messages, tools)
        self.last_ns = time.perf_counter_ns() - started
        return found


class GcWatch:
    """Records the pause of every cyclic collection, through `gc.callbacks`."""

    def __init__(self) -> None:
        self.pauses_us: list[float] = []
        self._started = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter_ns()
            return
        self.pauses_us.append((time.perf_counter_ns() - self._started) / 1000)

    @contextmanager
    def watching(self) -> Iterator[GcWatch]:
        gc.callbacks.append(self)
        try:
            yield self
        finally:
            gc.callbacks.remove(self)


@dataclass(slots=True, eq=False)
class _InFlight:
    backend: str
    uncached_tokens: int
    decoding: bool = False
    done: bool = False


@dataclass(slots=True)
class SimulatedLoad:
    """Keeps the fleet busy as dispatch would, so the load-aware policies see real numbers.

    A conversation's previous request completes before its next one is sent (a client
    waits for the answer); besides, at most `window` requests stay in flight, and all but the
    `window // 2` most recent have finished prefill and are decoding.
    """

    state: FleetState
    window: int
    _open: dict[str, _InFlight] = field(default_factory=dict)
    _prefilling: deque[_InFlight] = field(default_factory=deque)

    def finish(self, key: str) -> None:
        """The client `key` has its answer: its request leaves the fleet."""
        request = self._open.pop(key, None)
        if request is not None:
            self._complete(request)

    def dispatch(self, key: str, backend: str, uncached_tokens: int) -> None:
        self.finish(key)
        self.state.acquire(backend, uncached_tokens)
        self._open[key] = request = _InFlight(backend, uncached_tokens)
        self._prefilling.append(request)
        while len(self._prefilling) > self.window // 2:
            self._decode(self._prefilling.popleft())
        while len(self._open) > self.window:
            self._complete(self._open.pop(next(iter(self._open))))

    def _decode(self, request: _InFlight) -> None:
        if request.done or request.decoding:
            return
        request.decoding = True
        self.state.prefill_done(request.backend, request.uncached_tokens)
        self.state.decode_started(request.backend)

    def _complete(self, request: _InFlight) -> None:
        request.done = True
        if request.decoding:
            self.state.decode_ended(request.backend)
        else:
            self.state.prefill_done(request.backend, request.uncached_tokens)
        self.state.release(request.backend)


@dataclass(slots=True)
class Bench:
    """A router built as the gateway builds it, plus the bench's instruments."""

    router: Router
    route: RouteConfig
    fingerprinter: TimedFingerprinter
    load: SimulatedLoad
    gc_watch: GcWatch
    headers: dict[str, str]
    max_tokens: int
    admission: Admission

    @classmethod
    def build(cls, config: Config, args: argparse.Namespace) -> Bench:
        state = FleetState(config.backends, config.health)
        # As the gateway builds it: with the quality book, so quality-filter reads views.
        book = QualityBook(config.quality)
        pipelines = build_pipelines(config.policies, config.profiles)
        router = Router(config, state, pipelines, quality=book)
        # Router builds `Fingerprinter(TokenCounter())`; the same, with a stopwatch.
        router.fingerprinter = fingerprinter = TimedFingerprinter(TokenCounter())
        headers = {}
        if args.ttft_slo_ms:
            headers["x-switchyard-ttft-ms"] = str(args.ttft_slo_ms)
        # Flow control on, with room for every request: its empty-queue path, timed.
        flow = FlowControlConfig(enabled=True, saturation=_ROOMY)
        return cls(
            router=router,
            route=router.route(config.routes[0].name),
            fingerprinter=fingerprinter,
            load=SimulatedLoad(state, args.in_flight),
            gc_watch=GcWatch(),
            headers=headers,
            max_tokens=args.max_tokens,
            admission=Admission(flow, state),
        )

    def traits(self, raw: bytes) -> RequestTraits:
        body, head = parse_body(raw, ENDPOINT)
        return traits_of(ENDPOINT, body, head, self.headers)

    def decide(self, raw: bytes, client: str) -> Sample:
        """Parse, decide (timed), then remember and dispatch on the chosen backend."""
        self.load.finish(client)
        started = time.perf_counter_ns()
        traits = self.traits(raw)
        parsed = time.perf_counter_ns()
        fp, pauses = self.fingerprinter, len(self.gc_watch.pauses_us)
        hits, misses = fp.hits, fp.misses
        before = time.perf_counter_ns()
        leg = self.router.decide(self.route, traits)
        total = time.perf_counter_ns() - before
        admission_ns = self.admit(leg, traits)
        gc_pause_us = sum(self.gc_watch.pauses_us[pauses:])
        decision, work = leg.decision, leg.work
        chosen = decision.chosen
        if chosen is not None:
            self.router.remember(chosen, work)
            self.load.dispatch(client, chosen, work.uncached(chosen))
        return Sample(
            total_ns=total,
            fingerprint_ns=fp.last_ns,
            pipeline_ns=round(decision.total_us * 1000),
            parse_ns=parsed - started,
            prompt_tokens=work.prompt_tokens,
            cached_on_chosen=work.cached_tokens.get(chosen, 0) if chosen else 0,
            messages_reused=fp.hits - hits,
            messages_new=fp.misses - misses,
            gc_pause_us=gc_pause_us,
            plugins_us=dict(decision.timings_us),
            admission_ns=admission_ns,
        )

    def admit(self, leg: Leg, traits: RequestTraits) -> int:
        """Flow control on the decided request, as the proxy runs it, timed (ns). At an
        empty queue with room it returns without awaiting: driven here without a loop."""
        # A target every backend meets, so the path timed is the common one: room found
        # on the decision's choice, its predicted TTFT checked (the request's own target,
        # under the simulated load, may leave none: the request would be held).
        roomy = replace(traits, ttft_slo_ms=1e9) if traits.ttft_slo_ms else traits
        plan = RoutePlan(self.router, [self.route], roomy, decided=leg)
        record = DecisionRecord(leg.decision, leg.work)
        started = time.perf_counter_ns()
        standing = self.admission.standing(None, self.headers)
        held = self.admission.admit(self.route, plan, standing, record)
        try:
            held.send(None)
        except StopIteration:
            return time.perf_counter_ns() - started
        held.close()
        raise RuntimeError("flow control held a request at an empty queue with room")


def run_conversations(
    bench: Bench, factory: ConversationFactory, args: argparse.Namespace
) -> tuple[list[Sample], list[Sample]]:
    """Interleaved conversations until `iterations` follow-up turns are measured.

    Returns (follow-up turns, first turns); the first `warmup` requests are not kept.
    """
    active = [factory.start(i) for i in range(args.sessions)]
    started = len(active)
    follow_ups: list[Sample] = []
    firsts: list[Sample] = []
    sent = 0
    while len(follow_ups) < args.iterations:
        for i, conversation in enumerate(active):
            sample = bench.decide(chat_body(conversation, bench.max_tokens), f"chat-{i}")
            if sent >= args.warmup:
                (follow_ups if conversation.sent else firsts).append(sample)
            sent += 1
            if not factory.advance(conversation):
                active[i] = factory.start(started)
                started += 1
    return follow_ups[: args.iterations], firsts


def run_cold(bench: Bench, factory: ConversationFactory, args: argparse.Namespace) -> list[Sample]:
    """Never-seen prompts, decided on the router the conversations left warm."""
    samples = []
    for i in range(args.cold_warmup + args.iterations):
        sample = bench.decide(chat_body(factory.cold(i), bench.max_tokens), f"cold-{i}")
        if i >= args.cold_warmup:
            samples.append(sample)
    return samples


def run_size(prompt_tokens: int, args: argparse.Namespace, cpt: float) -> list[dict[str, Any]]:
    """All cases at one prompt size, on a fresh router (fresh index and caches)."""
    bench = Bench.build(fleet_config(args.backends, args.capacity_tokens), args)
    factory = ConversationFactory(prompt_tokens, args.turns, cpt, args.seed)
    with bench.gc_watch.watching(), _collector(enabled=not args.no_gc):
        follow_ups, firsts = run_conversations(bench, factory, args)
        cold = run_cold(bench, factory, args)
    return [
        summarize(prompt_tokens, "follow-up turns", follow_ups),
        summarize(prompt_tokens, "all turns", follow_ups + firsts),
        summarize(prompt_tokens, "cold", cold),
    ]


@contextmanager
def _collector(*, enabled: bool) -> Iterator[None]:
    """With GC off, collect first, so leftovers of the set-up do not count either way."""
    if enabled:
        yield
        return
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _sizes(text: str) -> list[int]:
    sizes = [int(part) for part in text.split(",") if part.strip()]
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive token counts, got {text!r}")
    return sizes


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.decision", description=__doc__.splitlines()[0]
    )
    add = parser.add_argument
    add("--backends", type=int, default=16, help="backends behind the route (default: 16)")
    add("--prompt-tokens", type=_sizes, default=[8_192, 131_072], help="comma-separated sizes")
    add("--iterations", type=int, default=2_000, help="measured decisions per case")
    add("--warmup", type=int, default=200, help="conversation requests not measured")
    add("--cold-warmup", type=int, default=20, help="cold requests not measured")
    add("--sessions", type=int, default=8, help="conversations in progress at once")
    add("--turns", type=int, default=6, help="requests per conversation")
    add("--in-flight", type=int, default=32, help="simulated requests in flight")
    add("--capacity-tokens", type=int, default=1_000_000, help="KV cache per backend")
    add("--ttft-slo-ms", type=float, default=2_000.0, help="x-switchyard-ttft-ms; 0: none")
    add("--max-tokens", type=int, default=512, help="max_tokens of every request")
    add("--seed", type=int, default=1)
    add("--no-gc", action="store_true", help="disable the cyclic GC while measuring")
    add("--json", type=Path, help="write the results to this file")
    args = parser.parse_args(argv)
    if min(args.backends, args.iterations, args.sessions, args.turns) < 1:
        parser.error("--backends, --iterations, --sessions and --turns must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    counter = TokenCounter()
    if counter.source == "byte-estimate":
        warning = "tiktoken's offline encoding is missing; token counts are estimates"
        print(f"decision: {warning}", file=sys.stderr)
    cpt = chars_per_token(counter)
    params = {key: value for key, value in vars(args).items() if key != "json"}
    params |= {"profile": PROFILE, "chars_per_token": cpt, "token_counter": counter.source}
    info = machine()
    rows = []
    for size in args.prompt_tokens:
        print(f"decision: {size:,}-token prompts ...", file=sys.stderr, flush=True)
        rows += run_size(size, args, cpt)
    info["loadavg_at_end"] = os.getloadavg()
    print(render(rows, params))
    if args.json:
        result = {"machine": info, "params": params, "cases": rows}
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

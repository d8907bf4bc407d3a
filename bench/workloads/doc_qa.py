"""Question answering over hot documents, as a replayable trace.

`documents` documents of 5-10K tokens each; each question picks one with Zipf popularity
(document k, counting from 1, with weight k^-zipf) and asks about it: a one-line system
prompt shared by all, then the document, then the question. A share of the requests are
one-shot prompts unrelated to any document. Every request is a root; arrivals are a Poisson
process of `rate_per_s`. Two sizings in the catalog: 40 documents (~300K tokens) fit in the
fleet's KV (4 engines x 100,000 tokens), 150 (~1.1M) do not. A document's text depends only
on the seed and its number, so a trace holds only the documents it asks about.

Load arithmetic (1,200 requests: `python -m bench.workloads.load_estimate`; terms as in the
docstring of `bench.workloads.catalog`): a question's prompt is ~7,600 tokens (document and
question), a one-shot one ~2,250: ~7,200 on average (6,600-8,100 in seeds 1-3, as their most
popular documents happen to be short or long), and ~165 output tokens. Every request is a
root, so the live pace changes neither the order requests come in nor the reuse h of the
offline bounded longest-prefix router, and per request the engine time is (1 - h) x 7,200 /
4,000 s of prefill plus 165 x 0.5 ms of decode. At `rate_per_s` λ over 4 engines: busy = λ x
((1 - h) x 7,200 / 4,000 + 0.083) / 4. The catalog's rates put it at ~70 % on average over
seeds 1-3 (each over its own span):

    cell          λ (req/s)  h, seeds 1/2/3      prefill   decode   busy, seeds 1/2/3
    z0.8 fits       13.0     92.0/93.1/93.2 %   46-39 %   28-25 %   75/67/64 %
    z1.2 fits       13.0     91.3/92.7/93.3 %   49-40 %   28-25 %   78/68/65 %
    z1.6 fits       13.0     91.6/92.7/93.9 %   47-38 %   28-25 %   76/67/64 %
    z0.8 spills      3.3     55.6/57.6/58.9 %   67-59 %    7-6 %    74/69/66 %
    z1.2 spills      5.5     74.6/75.9/78.0 %   62-55 %   12-11 %   74/69/66 %
    z1.6 spills      9.7     86.7/87.9/90.6 %   56-44 %   21-19 %   77/70/63 %

When the documents fit, what a router cannot reuse is mostly the one-shot prompts and each
document's first reading, and answers take over a third of the engines' busy time: prefill
stays near 40-50 % because more questions would push TPOT (≈ 15 ms / (1 - busy)) past its
60 ms SLO before prefill got to 60 %.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bench.workloads.builder import TraceBuilder, poisson_starts, seeded
from bench.workloads.shared_prefix import text_of_tokens

SYSTEM = "doc-sys"


@dataclass(frozen=True)
class DocQaShape:
    seed: int = 1
    requests: int = 1200
    rate_per_s: float = 13.0
    documents: int = 40
    document_tokens: tuple[int, int] = (5000, 9999)
    zipf: float = 1.2
    one_shot_share: float = 0.08
    question_tokens: tuple[int, int] = (20, 150)
    one_shot_tokens: tuple[int, int] = (500, 4000)
    output_tokens: tuple[int, int] = (30, 300)


def document_tokens(shape: DocQaShape) -> list[int]:
    """Every document's size in tokens, whether or not the trace asks about it."""
    return [
        seeded(shape.seed, "doc-size", k).randint(*shape.document_tokens)
        for k in range(shape.documents)
    ]


def zipf_shares(documents: int, exponent: float) -> list[float]:
    """The share of questions each document gets: k^-exponent, normalised."""
    weights = [(k + 1) ** -exponent for k in range(documents)]
    total = sum(weights)
    return [w / total for w in weights]


def lines(shape: DocQaShape) -> Iterator[dict[str, Any]]:
    """The meta line, then segments before first use and requests in dispatch order."""
    rng = random.Random(shape.seed)
    builder = TraceBuilder()
    builder.segment(SYSTEM, "Answer questions using only the document below.\n")
    sizes = document_tokens(shape)
    cumulative = list(itertools.accumulate(zipf_shares(shape.documents, shape.zipf)))
    for i in range(shape.requests):
        output_tokens = rng.randint(*shape.output_tokens)
        if rng.random() < shape.one_shot_share:
            _one_shot(builder, rng, shape, i, output_tokens)
            continue
        k = rng.choices(range(shape.documents), cum_weights=cumulative)[0]
        document = builder.segment_made(
            f"doc-{k}", functools.partial(_document_text, shape.seed, k, sizes[k])
        )
        question = text_of_tokens(rng, rng.randint(*shape.question_tokens))
        builder.segment(f"doc-q{i}", f"Question {i}: {question}")
        messages = [("system", (SYSTEM,)), ("user", (document, f"doc-q{i}"))]
        builder.request(f"doc-r{i}", f"doc-{k}", messages, output_tokens)
    builder.start_roots(poisson_starts(rng, shape.requests, shape.rate_per_s))
    meta = {
        "name": f"doc-qa-z{shape.zipf:g}-{shape.documents}docs-seed{shape.seed}",
        "description": (
            f"questions over {shape.documents} documents ({sum(sizes):,} tokens), "
            f"Zipf {shape.zipf:g}, {shape.one_shot_share:.0%} one-shot prompts"
        ),
        "family": "doc-qa",
        "seed": shape.seed,
        "rate_per_s": shape.rate_per_s,
        "zipf": shape.zipf,
        "documents": shape.documents,
        "document_tokens_total": sum(sizes),
    }
    yield from builder.lines(meta)


def _document_text(seed: int, k: int, tokens: int) -> str:
    lead = f"Document {k}.\n"
    return lead + text_of_tokens(seeded(seed, "doc-text", k), tokens - len(lead) // 4)


def _one_shot(
    builder: TraceBuilder, rng: random.Random, shape: DocQaShape, i: int, output_tokens: int
) -> None:
    text = f"Unrelated request {rng.getrandbits(64):016x}.\n" + text_of_tokens(
        rng, rng.randint(*shape.one_shot_tokens)
    )
    builder.segment(f"doc-one{i}", text)
    messages = [("user", (f"doc-one{i}",))]
    builder.request(f"doc-r{i}", f"doc-one{i}", messages, output_tokens)

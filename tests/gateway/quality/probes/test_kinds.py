"""The needle probe's verdicts and the context refusals it counts, and a prober that
records them: on the emulator a needle is always recalled, on a small real model often not."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from gateway.quality.book.quality_book import QualityBook
from gateway.quality.config import ProbeConfig, QualityConfig
from gateway.quality.probes.kinds import (
    NEEDLE_MAX_TOKENS,
    READ_WHOLE_SHARE,
    Needle,
    Verdict,
    context_refusal,
    judge_needle,
    needle_probe,
)
from gateway.quality.probes.prober import Prober
from providers.base import Deadlines, UpstreamRequest, UpstreamResponse
from providers.errors import UpstreamStatusError

LLAMA_REFUSAL = {
    "error": {
        "code": 400,
        "message": "request (1449 tokens) exceeds the available context size (1024 tokens)",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 1449,
        "n_ctx": 1024,
    }
}


@pytest.fixture
def needle() -> Needle:
    return needle_probe("m", 512, random.Random(1))


def answer(text: str, prompt_tokens: int | None) -> dict[str, Any]:
    usage = {} if prompt_tokens is None else {"usage": {"prompt_tokens": prompt_tokens}}
    return {"choices": [{"message": {"content": text}}], **usage}


def test_needle_asks_for_room_to_repeat_the_question(needle: Needle) -> None:
    assert needle.body["max_tokens"] == NEEDLE_MAX_TOKENS >= 32
    assert needle.context_words == len(needle.body["messages"][0]["content"].split())


def test_recalled_needle_is_right(needle: Needle) -> None:
    assert judge_needle(needle, answer(f'It is "{needle.value}".', 10)) == Verdict()


def test_miss_on_a_context_read_whole_is_no_evidence(needle: Needle) -> None:
    whole = int(needle.context_words * READ_WHOLE_SHARE) + 1
    verdict = judge_needle(needle, answer("The answer is: 100.", whole))
    assert verdict.evidence is False
    assert verdict.problem is not None and "read" in verdict.problem


@pytest.mark.parametrize("prompt_tokens", [None, 150], ids=["no-usage", "truncated"])
def test_miss_without_proof_of_the_whole_context_is_wrong(
    needle: Needle, prompt_tokens: int | None
) -> None:
    verdict = judge_needle(needle, answer("I do not know.", prompt_tokens))
    assert verdict.evidence is True
    assert verdict.problem is not None and "not recalled" in verdict.problem


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (400, LLAMA_REFUSAL, "refused a 1,449-token prompt: its context holds 1,024 tokens"),
        (
            400,
            {"error": {"code": "context_length_exceeded", "message": "too long"}},
            "refused the prompt for its context size (HTTP 400)",
        ),
        (
            400,
            {"error": {"message": "This model's maximum context length is 2048 tokens."}},
            "refused the prompt for its context size (HTTP 400)",
        ),
        (400, {"error": {"message": "logprobs are not supported"}}, None),
        (500, LLAMA_REFUSAL, None),
        (400, {"error": "context length"}, None),
        (400, [1, 2], None),
    ],
)
def test_context_refusal(status: int, body: Any, expected: str | None) -> None:
    assert context_refusal(status, orjson.dumps(body)) == expected


def test_context_refusal_of_no_json() -> None:
    assert context_refusal(400, b"<html>") is None


class RefusingProvider:
    """Answers the canary with logprobs and refuses anything long, as llama-server does."""

    name = "cut"
    base_url = "http://127.0.0.1:1/v1"

    def __init__(self, refusal: dict[str, Any]) -> None:
        self.refusal = refusal

    async def send(self, request: UpstreamRequest, deadlines: Deadlines) -> UpstreamResponse:
        body = orjson.loads(request.body)
        if body.get("max_tokens") == 1:
            top = [{"token": "4", "logprob": -0.1}, {"token": "5", "logprob": -2.5}]
            content = [{"token": "4", "logprob": -0.1, "top_logprobs": top}]
            canary = {"choices": [{"message": {"content": "4"}, "logprobs": {"content": content}}]}
            return UpstreamResponse(200, "application/json", orjson.dumps(canary))
        raise UpstreamStatusError(
            "refused",
            backend=self.name,
            upstream_status=400,
            upstream_body=orjson.dumps(self.refusal),
        )

    async def close(self) -> None:
        return None


async def probe_once(refusal: dict[str, Any]) -> tuple[list[Any], QualityBook]:
    config = ProbeConfig(tool_call=False, needle_tokens=2000)
    book = QualityBook(QualityConfig(probes=config))
    providers: Any = {"cut": RefusingProvider(refusal)}
    prober = Prober({"cut": config}, book, providers, [("cut", "m")])
    return await prober.run_cycle(), book


async def test_a_needle_refused_for_its_size_is_a_failed_needle() -> None:
    results, book = await probe_once(LLAMA_REFUSAL)
    needle = results[-1]
    assert (needle.kind, needle.ok) == ("needle", False)
    assert "its context holds 1,024 tokens" in needle.detail
    bad, total = book.evidence("cut", "m")["probe_needle"]
    assert bad == total > 0
    assert [r.drift for r in results[:-1]] == [0.0, 0.0, 0.0]  # canaries carry their drift


async def test_any_other_refusal_is_still_no_verdict() -> None:
    results, book = await probe_once({"error": {"message": "logprobs are not supported"}})
    needle = results[-1]
    assert needle.ok is None
    assert needle.detail.startswith("probe refused")
    assert "probe_needle" not in book.evidence("cut", "m")

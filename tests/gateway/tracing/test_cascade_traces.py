"""A cascade's request as one trace: each tier's attempt (and the judge's call) is its own
client span under the request's server span, tagged with its tier and what became of it;
the server span ends with the client's answer and says what every tier cost."""

from __future__ import annotations

from typing import Any

import pytest

from bench.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.conftest import StartEmulator, StartGateway
from tests.gateway.http.test_cascade_judge import StartJudge, start_judge
from tests.gateway.tracing.test_traces import exported, receiver, traced_config

__all__ = ["receiver", "start_judge"]  # fixtures

QUESTION = [{"role": "user", "content": "Name a river in France."}]


def cascade(
    receiver: OtlpReceiver, backends: dict[str, str], judge: str | None = None
) -> dict[str, Any]:
    config = traced_config(receiver, backends)
    config["routes"] = [
        {"name": "cheap", "model": "emulated-model", "backends": ["small"]},
        {"name": "best", "model": "emulated-model", "backends": ["strong"]},
    ]
    rules: dict[str, Any] = {
        "name": "auto",
        "tiers": ["cheap", "best"],
        "checks": ["empty", "loop"],
        "start": {"learned": False},
    }
    if judge is not None:
        config["backends"].append({"name": "judge", "base_url": judge, "models": ["judge-model"]})
        config["routes"].append({"name": "grader", "model": "judge-model", "backends": ["judge"]})
        rules["judge"] = {"route": "grader", "min_yes": 0.5}
    config["cascades"] = [rules]
    return config


def under(server: ReceivedSpan, spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    assert all((s.trace_id, s.parent_id) == (server.trace_id, server.span_id) for s in spans)
    return sorted(spans, key=lambda s: s.start_ns)


def tier_of(span: ReceivedSpan) -> tuple[int, str, str | None]:
    a = span.attributes
    return (
        a["switchyard.cascade.tier"],
        a["switchyard.cascade.tier_route"],
        a.get("switchyard.cascade.outcome"),
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_an_escalated_request_has_a_client_span_per_tier(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    receiver: OtlpReceiver,
    stream: bool,
) -> None:
    small = await start_emulator(faults={"loop_rate": 1.0})
    strong = await start_emulator()
    backends = {"small": small.base_url, "strong": strong.base_url}
    gw = await start_gateway(cascade(receiver, backends))
    body: dict[str, Any] = {"model": "auto", "messages": QUESTION, "max_tokens": 40}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["x-switchyard-cascade-tier"] == "best"
    spans = await exported(gw, receiver)
    (server,) = spans["server"]
    decisions, (cheap, best) = under(server, spans["internal"]), under(server, spans["client"])
    assert [tier_of(d)[:2] for d in decisions] == [(0, "cheap"), (1, "best")]
    assert tier_of(cheap) == (0, "cheap", "escalated") and not cheap.error
    assert tier_of(best) == (1, "best", "passed")
    assert cheap.attributes["switchyard.backend"] == "small"
    assert best.attributes["switchyard.backend"] == "strong"
    assert cheap.end_ns <= best.start_ns  # the escalation, in order
    assert best.attributes["gen_ai.response.finish_reasons"]
    # The server span: the client's answer (the last tier's), and what both tiers cost.
    assert server.attributes["switchyard.cascade.name"] == "auto"
    assert tier_of(server) == (1, "best", "passed")
    assert (
        server.attributes["gen_ai.usage.output_tokens"]
        == (best.attributes["gen_ai.usage.output_tokens"])
    )
    both = cheap.attributes["switchyard.cost_usd"] + best.attributes["switchyard.cost_usd"]
    assert server.attributes["switchyard.cost_usd"] == pytest.approx(both)
    assert server.end_ns >= best.end_ns and not server.error


async def test_the_judges_call_is_a_client_span_of_its_tier(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    receiver: OtlpReceiver,
    start_judge: StartJudge,
) -> None:
    _, url = await start_judge("no", 0.9)
    small, strong = await start_emulator(), await start_emulator()
    backends = {"small": small.base_url, "strong": strong.base_url}
    gw = await start_gateway(cascade(receiver, backends, judge=url))
    response = await gw.client.post(
        "/v1/chat/completions", json={"model": "auto", "messages": QUESTION, "max_tokens": 20}
    )
    assert response.headers["x-switchyard-cascade-escalated"] == "cheap=judge"
    spans = await exported(gw, receiver)
    (server,) = spans["server"]
    cheap, judge, best = under(server, spans["client"])
    assert tier_of(cheap) == (0, "cheap", "escalated")
    assert tier_of(judge) == (0, "cheap", "judge")
    assert judge.attributes["switchyard.cascade.judge"] is True
    assert judge.attributes["switchyard.backend"] == "judge"
    assert judge.attributes["gen_ai.response.finish_reasons"] == ["length"]
    assert judge.attributes["gen_ai.usage.input_tokens"] == 40
    assert tier_of(best) == (1, "best", "passed")
    assert len(spans["internal"]) == 3  # a decision each: the cheap tier, the judge, the best
    assert tier_of(server) == (1, "best", "passed")


async def test_a_cascade_refused_before_any_tier_ends_its_server_span(
    start_emulator: StartEmulator, start_gateway: StartGateway, receiver: OtlpReceiver
) -> None:
    small, strong = await start_emulator(), await start_emulator()
    backends = {"small": small.base_url, "strong": strong.base_url}
    gw = await start_gateway(cascade(receiver, backends))
    response = await gw.client.post(
        "/v1/completions", json={"model": "auto", "prompt": "hi", "max_tokens": 3}
    )
    assert response.status_code == 400
    spans = await exported(gw, receiver)
    (server,) = spans["server"]
    assert server.attributes["http.response.status_code"] == 400
    assert spans["client"] == []

"""Anthropic's cache writes by retention: the 1-hour ones (`cache_creation`'s
`ephemeral_1h_input_tokens`) reach the normalised usage beside the total, whole or
streamed, so a request is charged each retention's write price."""

from __future__ import annotations

import orjson
import pytest

from gateway.telemetry.record import RequestRecord
from policies.prices import Prices
from providers.anthropic.messages_wire import MessagesUsage
from providers.anthropic.response_translation import openai_usage
from providers.usage import Usage, usage_from_body
from tests.gateway.telemetry.builders import record

WIRE = {
    "input_tokens": 50,
    "output_tokens": 10,
    "cache_read_input_tokens": 1_000,
    "cache_creation_input_tokens": 3_000,
    "cache_creation": {"ephemeral_5m_input_tokens": 1_000, "ephemeral_1h_input_tokens": 2_000},
}


def normalised(usage: MessagesUsage) -> Usage | None:
    return usage_from_body(orjson.dumps({"usage": openai_usage(usage)}))


def test_the_split_reaches_the_normalised_usage() -> None:
    assert normalised(MessagesUsage.model_validate(WIRE)) == Usage(
        4_050, 10, 1_000, cache_write_tokens=3_000, cache_write_1h_tokens=2_000
    )


def test_without_the_split_every_write_counts_as_short() -> None:
    wire = {k: v for k, v in WIRE.items() if k != "cache_creation"}
    usage = normalised(MessagesUsage.model_validate(wire))
    assert usage is not None and usage.cache_write_1h_tokens is None


def test_a_streams_cumulative_update_keeps_the_split() -> None:
    start = MessagesUsage.model_validate(WIRE)
    delta = MessagesUsage.model_validate({"output_tokens": 99})
    merged = start.model_copy(update=delta.model_dump(exclude_none=True))
    assert merged.cache_creation_1h_input_tokens == 2_000 and merged.output_tokens == 99


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param(
            Usage(4_050, 10, 1_000, cache_write_tokens=3_000, cache_write_1h_tokens=2_000),
            (50 * 3.0 + 1_000 * 0.3 + 1_000 * 3.75 + 2_000 * 6.0 + 10 * 15.0) / 1e6,
            id="split",
        ),
        pytest.param(
            Usage(4_050, 10, 1_000, cache_write_tokens=3_000),
            (50 * 3.0 + 1_000 * 0.3 + 3_000 * 3.75 + 10 * 15.0) / 1e6,
            id="no-split",
        ),
    ],
)
def test_each_retention_at_its_price(usage: Usage, expected: float) -> None:
    prices = Prices(
        input_usd_per_mtok=3.0,
        cached_input_usd_per_mtok=0.3,
        cache_write_usd_per_mtok=3.75,
        cache_write_1h_usd_per_mtok=6.0,
        output_usd_per_mtok=15.0,
    )
    made: RequestRecord = record(usage=usage)
    assert made.cost_usd(prices) == pytest.approx(expected)

"""Reading llama-server's /slots and /props, from the answers a real one gave."""

from __future__ import annotations

import orjson
import pytest

from gateway.fleet.scrape.engine_metrics import EngineLoad, parse_engine_load
from gateway.fleet.scrape.llama_cpp_status import EngineSlots, parse_context_window, parse_slots
from tests import llama_server_replies as replies


def test_slots_of_a_real_server() -> None:
    assert parse_slots(replies.SLOTS_IDLE) == EngineSlots(total=1, busy=0, n_ctx=2048)
    assert parse_slots(replies.SLOTS_BUSY) == EngineSlots(total=1, busy=1, n_ctx=2048)


def test_several_slots_count_the_busy_ones_and_the_smallest_window() -> None:
    slots = [
        {"id": 0, "n_ctx": 4096, "is_processing": True},
        {"id": 1, "n_ctx": 4096, "is_processing": False},
        {"id": 2, "n_ctx": 2048, "is_processing": True},
        {"id": 3, "is_processing": "yes"},
    ]
    assert parse_slots(orjson.dumps(slots)) == EngineSlots(total=4, busy=2, n_ctx=2048)


@pytest.mark.parametrize(
    "body",
    [replies.LOADING, replies.NO_SLOTS, b"[]", b'[{"id": 0}, 1]', b"not json", b"{}"],
    ids=["loading", "no-slots", "empty", "not-all-slots", "not-json", "object"],
)
def test_anything_else_is_no_slots_reading(body: bytes) -> None:
    assert parse_slots(body) is None


def test_the_context_window_of_a_real_server() -> None:
    assert parse_context_window(replies.PROPS) == 2048


@pytest.mark.parametrize(
    "body",
    [
        replies.LOADING,
        b'{"default_generation_settings": {"n_ctx": 0}}',
        b'{"default_generation_settings": {"n_ctx": "2048"}}',
        b'{"default_generation_settings": {"n_ctx": true}}',
        b'{"default_generation_settings": []}',
        b'{"n_ctx": 2048}',
        b"[]",
        b"",
    ],
)
def test_no_window_without_a_positive_n_ctx(body: bytes) -> None:
    assert parse_context_window(body) is None


def test_a_real_servers_metrics_give_running_and_deferred() -> None:
    # This build exports no KV usage (llamacpp:kv_cache_usage_ratio is gone from newer
    # servers), so only the counts are read.
    load = parse_engine_load(replies.METRICS_BUSY.decode())
    assert load == EngineLoad("llama.cpp", running=1, waiting=1, kv_usage=None)

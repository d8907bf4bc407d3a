"""Reading engine load out of Prometheus text: the three engine families and odd input."""

from __future__ import annotations

import pytest

from gateway.fleet.scrape import engine_metrics
from gateway.fleet.scrape.engine_metrics import (
    EngineLoad,
    Sample,
    parse_engine_load,
    parse_line,
    samples,
)

MODEL = "meta-llama/Llama-3.1-8B-Instruct"

VLLM = f"""\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="{MODEL}"}} 12.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{engine="0",model_name="{MODEL}"}} 3.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="{MODEL}"}} 0.83
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{{engine="0",model_name="{MODEL}"}} 0.5
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{{engine="0",le="+Inf",model_name="{MODEL}"}} 42.0
vllm:time_to_first_token_seconds_sum{{engine="0",model_name="{MODEL}"}} 3.5
"""

VLLM_OLD = """\
vllm:num_requests_running{model_name="m"} 2.0
vllm:num_requests_swapped{model_name="m"} 0.0
vllm:num_requests_waiting{model_name="m"} 0.0
vllm:gpu_cache_usage_perc{model_name="m"} 0.25
"""

SGLANG = f"""\
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{{model_name="{MODEL}",dp_rank="0"}} 8.0
sglang:num_running_reqs{{model_name="{MODEL}",dp_rank="1"}} 6.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{{model_name="{MODEL}",dp_rank="0"}} 4.0
sglang:num_queue_reqs{{model_name="{MODEL}",dp_rank="1"}} 0.0
# TYPE sglang:token_usage gauge
sglang:token_usage{{model_name="{MODEL}",dp_rank="0"}} 0.28
sglang:token_usage{{model_name="{MODEL}",dp_rank="1"}} 0.61
sglang:cache_hit_rate{{model_name="{MODEL}"}} 0.0075
"""

LLAMA_CPP = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 33065
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.63
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 1
"""

# Newer llama.cpp builds dropped the KV gauge.
LLAMA_CPP_NO_KV = "llamacpp:requests_processing 1\nllamacpp:requests_deferred 0\n"

TWO_MODELS = """\
vllm:num_requests_running{model_name="mine"} 3
vllm:num_requests_running{model_name="theirs"} 7
vllm:num_requests_waiting{model_name="mine"} 1
vllm:num_requests_waiting{model_name="theirs"} 5
vllm:gpu_cache_usage_perc{model_name="mine"} 0.2
vllm:gpu_cache_usage_perc{model_name="theirs"} 0.9
"""

ODD = """\
# a comment with vllm:num_requests_running 99 in it
vllm:num_requests_running{model_name="a \\"quoted\\" name, with } and \\\\"} 2 1712345678000
vllm:num_requests_running{model_name="unterminated} 50
vllm:num_requests_running  3\r
vllm:num_requests_waiting{model_name="m"} NaN
vllm:num_requests_waiting{model_name="n"} +Inf
vllm:num_requests_waiting{model_name="o"} 4e0 # {trace_id="abc"} 1.0
vllm:num_requests_running_total 1000
vllm:gpu_cache_usage_perc 1.7
"""


@pytest.mark.parametrize(
    ("text", "models", "expected"),
    [
        pytest.param(VLLM, [MODEL], EngineLoad("vllm", 12, 3, 0.83), id="vllm-new-kv-name-wins"),
        pytest.param(VLLM_OLD, ["m"], EngineLoad("vllm", 2, 0, 0.25), id="vllm-old"),
        pytest.param(SGLANG, [MODEL], EngineLoad("sglang", 14, 4, 0.61), id="sglang-dp-ranks"),
        pytest.param(LLAMA_CPP, [], EngineLoad("llama.cpp", 2, 1, 0.63), id="llama-cpp"),
        pytest.param(
            LLAMA_CPP_NO_KV, [], EngineLoad("llama.cpp", 1, 0, None), id="llama-cpp-no-kv"
        ),
        pytest.param(TWO_MODELS, ["mine"], EngineLoad("vllm", 3, 1, 0.2), id="pick-own-model"),
        pytest.param(TWO_MODELS, ["other"], EngineLoad("vllm", 10, 6, 0.9), id="no-match-sums"),
        pytest.param(TWO_MODELS, [], EngineLoad("vllm", 10, 6, 0.9), id="no-models-sums"),
        pytest.param(ODD, [], EngineLoad("vllm", 5, 4, 1.0), id="odd-lines"),
        pytest.param(
            "vllm:num_requests_running -2\nvllm:gpu_cache_usage_perc -0.1\n",
            [],
            EngineLoad("vllm", 0, None, 0.0),
            id="negatives-clamped",
        ),
        pytest.param(
            "sglang:token_usage 0.4\n", [], EngineLoad("sglang", None, None, 0.4), id="kv-only"
        ),
    ],
)
def test_engine_load(text: str, models: list[str], expected: EngineLoad) -> None:
    assert parse_engine_load(text, models) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("# HELP x\n# TYPE x gauge\n", id="comments-only"),
        pytest.param("process_cpu_seconds_total 12.5\nup 1\n", id="other-exporter"),
        pytest.param("<html><body>Not Found</body></html>", id="html"),
        pytest.param('{"status": "ok"}', id="json"),
        pytest.param("vllm:num_requests_running NaN\n", id="only-nan"),
        pytest.param('vllm:num_requests_running{model_name="m" 1\n', id="broken-labels"),
        pytest.param("\x00\xff garbage \x01", id="binary"),
    ],
)
def test_unknown_formats_are_no_data(text: str) -> None:
    assert parse_engine_load(text, ["m"]) is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("up 1", Sample("up", {}, 1.0)),
        ("up 1 1712345678", Sample("up", {}, 1.0)),
        ('a{b="c"} 2.5', Sample("a", {"b": "c"}, 2.5)),
        ('a{b="c",} 2.5', Sample("a", {"b": "c"}, 2.5)),
        ('a{b="c", d="e"} -1', Sample("a", {"b": "c", "d": "e"}, -1.0)),
        ('a{b="x\\ny\\"z\\\\"} 0', Sample("a", {"b": 'x\ny"z\\'}, 0.0)),
        ("a{} 3", Sample("a", {}, 3.0)),
        ("a +Inf", Sample("a", {}, float("inf"))),
        ("  a   7  ", Sample("a", {}, 7.0)),
        ("a", None),
        ('a{b="c"}', None),
        ("a{b=c} 1", None),
        ('a{b="c" 1', None),
        ("a one", None),
        ('{"a", b="c"} 1', None),
    ],
)
def test_parse_line(line: str, expected: Sample | None) -> None:
    assert parse_line(line) == expected


def test_nan_is_parsed_but_not_used() -> None:
    (sample,) = samples("a NaN\n")
    assert sample.value != sample.value
    assert parse_engine_load("vllm:num_requests_waiting NaN\nvllm:num_requests_running 1") == (
        EngineLoad("vllm", 1, None, None)
    )


def test_a_large_exposition_is_parsed_only_where_it_matters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A busy vLLM with many histograms: about 1 MiB, of which a few lines matter. The
    # others are passed over by a prefix test, never parsed (it runs on the event loop).
    bucket = f'vllm:e2e_request_latency_seconds_bucket{{le="0.5",model_name="{MODEL}"}} 12.0\n'
    text = bucket * (1024 * 1024 // len(bucket)) + VLLM
    parsed: list[str] = []

    def counted(line: str) -> Sample | None:
        parsed.append(line)
        return parse_line(line)

    monkeypatch.setattr(engine_metrics, "parse_line", counted)
    assert parse_engine_load(text, [MODEL]) == EngineLoad("vllm", 12, 3, 0.83)
    assert 0 < len(parsed) < len(VLLM.splitlines())
    assert not [line for line in parsed if line.startswith("vllm:e2e_request_latency")]

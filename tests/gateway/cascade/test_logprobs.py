"""Token log-probabilities of a chat answer, from a whole body or a stream's SSE bytes:
choice 0's, finite ones only, the first MAX_LOGPROBS, never raising."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.cascade.logprobs import MAX_LOGPROBS, body_logprobs, stream_logprobs

DONE = b"data: [DONE]\n\n"


def tokens(*values: Any) -> dict[str, Any]:
    return {"content": [{"token": "t", "logprob": v} for v in values]}


def body(*choices: dict[str, Any] | None) -> dict[str, Any]:
    return {"choices": [{"index": i, "logprobs": lp} for i, lp in enumerate(choices)]}


def event(logprobs: dict[str, Any] | None, content: str = "t") -> bytes:
    delta = {"index": 0, "delta": {"content": content}, "logprobs": logprobs}
    return b"data: " + orjson.dumps({"choices": [delta]}) + b"\n\n"


# body_logprobs


def test_a_bodys_logprobs_are_those_of_choice_0_in_order() -> None:
    assert body_logprobs(body(tokens(-0.1, -2, 0), tokens(-9.0))) == (-0.1, -2.0, 0.0)


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(None, id="no-body"),
        pytest.param({}, id="no-choices"),
        pytest.param({"choices": []}, id="empty-choices"),
        pytest.param({"choices": "x"}, id="choices-not-a-list"),
        pytest.param({"choices": ["x"]}, id="choice-not-an-object"),
        pytest.param(body(None), id="logprobs-null"),
        pytest.param(body({"content": None}), id="content-null"),
        pytest.param(body({"content": "x"}), id="content-not-a-list"),
    ],
)
def test_a_body_without_logprobs_has_none(document: dict[str, Any] | None) -> None:
    assert body_logprobs(document) == ()


def test_a_bodys_unusable_values_are_skipped() -> None:
    found = body_logprobs(
        body(tokens(-0.5, float("nan"), float("-inf"), float("inf"), None, "x", -1.5))
    )
    assert found == (-0.5, -1.5)


def test_a_bodys_logprobs_are_bounded_to_the_first_ones() -> None:
    values = [-(i % 7) / 10 for i in range(MAX_LOGPROBS + 50)]
    found = body_logprobs(body(tokens(*values)))
    assert found == tuple(values[:MAX_LOGPROBS])


# stream_logprobs


def test_a_streams_logprobs_are_gathered_across_events() -> None:
    stream = event(tokens(-0.1)) + event(tokens(-0.2, -0.3)) + event(None) + DONE
    assert stream_logprobs(stream) == (-0.1, -0.2, -0.3)


def test_a_stream_in_crlf_lines_and_multi_line_data_is_read() -> None:
    crlf = event(tokens(-0.1)).replace(b"\n", b"\r\n")
    multi_line = b'data: {"choices": [{"logprobs":\ndata: {"content": [{"logprob": -0.4}]}}]}\n\n'
    assert stream_logprobs(crlf + multi_line + DONE) == (-0.1, -0.4)


def test_a_held_part_ending_mid_event_keeps_the_whole_events() -> None:
    whole = event(tokens(-0.1)) + event(tokens(-0.2))
    cut = event(tokens(-0.3))[:-12]
    assert stream_logprobs(whole + cut) == (-0.1, -0.2)


def test_a_last_event_without_its_blank_line_is_read() -> None:
    assert stream_logprobs(event(tokens(-0.1)) + event(tokens(-0.2))[:-2]) == (-0.1, -0.2)


def test_a_streams_events_without_logprobs_or_json_are_skipped() -> None:
    stream = (
        b": keep-alive\n\n"
        + b"data: not json\n\n"
        + b'data: {"error": "logprobs"}\n\n'
        + b'data: "logprobs"\n\n'
        + event(tokens(-0.1))
        + DONE
    )
    assert stream_logprobs(stream) == (-0.1,)


def test_a_streams_non_finite_values_are_skipped() -> None:
    nonfinite = (
        b'data: {"choices": [{"logprobs": {"content": [{"logprob": -Infinity}]}}]}\n\n'
        + b'data: {"choices": [{"logprobs": {"content": [{"logprob": NaN}]}}]}\n\n'
        + b'data: {"choices": [{"logprobs": {"content": [{"logprob": -1e999}]}}]}\n\n'
        + b'data: {"choices": [{"logprobs": {"content": [{"logprob": null}]}}]}\n\n'
    )
    assert stream_logprobs(event(tokens(-0.1)) + nonfinite + event(tokens(-0.2))) == (-0.1, -0.2)


def test_a_streams_logprobs_are_bounded_to_the_first_ones() -> None:
    per_event = 100
    events = MAX_LOGPROBS // per_event + 3
    values = [-(i % 11) / 10 for i in range(events * per_event)]
    stream = b"".join(
        event(tokens(*values[i : i + per_event])) for i in range(0, len(values), per_event)
    )
    assert stream_logprobs(stream) == tuple(values[:MAX_LOGPROBS])


@pytest.mark.parametrize(
    "data",
    [b"", DONE, b"\xff\xfe garbage", b"data: " + b"x" * (9 * 1024 * 1024)],
)
def test_a_stream_without_logprobs_has_none_and_never_raises(data: bytes) -> None:
    assert stream_logprobs(data) == ()

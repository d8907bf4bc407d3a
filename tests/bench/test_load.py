"""The load client's requests and its checks of what came back, in each client format."""

from __future__ import annotations

import orjson
import pytest

from bench.load import INGRESS_PATHS, ProtocolError, Target, _check, request_bytes


@pytest.mark.parametrize("ingress", list(INGRESS_PATHS))
@pytest.mark.parametrize("stream", [False, True])
def test_requests_are_in_the_format_of_their_path(ingress: str, stream: bool) -> None:
    path = INGRESS_PATHS[ingress]
    raw = request_bytes(Target("gw", 9, "m", path), stream, 16)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(f"POST {path} HTTP/1.1".encode())
    assert f"content-length: {len(body)}".encode() in head
    document = orjson.loads(body)
    assert document["model"] == "m" and document["stream"] is stream
    limit = {"chat": "max_tokens", "messages": "max_tokens", "responses": "max_output_tokens"}
    assert document[limit[ingress]] == 16


def test_each_format_counts_its_events_and_needs_its_end() -> None:
    chat = b"data: {}\n\ndata: {}\n\ndata: [DONE]\n\n"
    assert _check(200, chat, True, INGRESS_PATHS["chat"]) == 2
    messages = b"event: a\ndata: {}\n\nevent: message_stop\ndata: {}\n\n"
    assert _check(200, messages, True, INGRESS_PATHS["messages"]) == 2
    cut = b"event: response.incomplete\ndata: {}\n\n"
    assert _check(200, cut, True, INGRESS_PATHS["responses"]) == 1
    with pytest.raises(ProtocolError, match="message_stop"):
        _check(200, b"event: a\ndata: {}\n\n", True, INGRESS_PATHS["messages"])
    with pytest.raises(ProtocolError, match="DONE"):
        _check(200, b"data: {}\n\n", True, INGRESS_PATHS["chat"])


def test_whole_answers_are_checked_by_format() -> None:
    assert _check(200, b'{"choices": []}', False) == 0
    assert _check(200, b'{"stop_reason": "end_turn"}', False, INGRESS_PATHS["messages"]) == 0
    with pytest.raises(ProtocolError):
        _check(200, b'{"choices": []}', False, INGRESS_PATHS["responses"])
    with pytest.raises(ProtocolError, match="HTTP 500"):
        _check(500, b"{}", False)

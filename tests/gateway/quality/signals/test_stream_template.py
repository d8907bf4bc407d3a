"""The template path of the plain-SSE parse takes exactly what one JSON array parse takes.

The reference below is the array parse alone (the path before templates): every stream,
healthy or odd, must give the same facts, the same verdict (parsed or not) and, when not
parsed, leave the assembly untouched.
"""

from __future__ import annotations

import random

import orjson
import pytest

from gateway.quality.signals.collect import CollectBounds, _assembly, _parse_plain_sse, _result
from gateway.quality.signals.response_assembly import Assembly
from gateway.quality.signals.stream_template import parse_templated
from providers.transport.sse import SseDecoder
from tests.gateway.quality.streams import DONE, chunk, event, text_stream, usage_chunk

Facts = tuple[bool, object]


def decoded(data: bytes) -> tuple[list[bytes], list[bytes]]:
    """The stream's event data and event types, as the collector decodes them."""
    decoder = SseDecoder(keep_event_types=True)
    payloads = decoder.feed(data) + decoder.flush()
    return payloads, decoder.event_types or []


def array_parse(data: bytes, assembly: Assembly) -> bool:
    """The reference: every event's data, a JSON object, in one array, each event taken."""
    payloads, types = decoded(data)
    objects, done = [], False
    if b"error" in types:
        return False
    for payload in payloads:
        if not payload.startswith(b"{"):
            if payload == b"[DONE]":
                done = True
                continue
            return False
        objects.append(payload)
    try:
        events = orjson.loads(b"[" + b",".join(objects) + b"]")
    except orjson.JSONDecodeError:
        return False
    if not all(isinstance(payload, dict) for payload in events):
        return False
    for payload in events:
        assembly.add_chunk(payload)
    assembly.done = assembly.done or done
    return True


def plain_parse(data: bytes, assembly: Assembly) -> bool:
    return _parse_plain_sse(*decoded(data), assembly)


def facts(parse: object, data: bytes, bounds: CollectBounds, frozen: bool) -> Facts:
    assembly = _assembly(bounds)
    assembly.text_frozen = frozen
    parsed = parse(data, assembly)  # type: ignore[operator]
    return parsed, _result(assembly, capped=False, bytes_seen=0)


def same(data: bytes, bounds: CollectBounds | None = None, frozen: bool = False) -> Facts:
    bounds = bounds or CollectBounds()
    expected = facts(array_parse, data, bounds, frozen)
    assert facts(plain_parse, data, bounds, frozen) == expected
    return expected


def sglang_chunk(content: str) -> dict[str, object]:
    """A chunk whose delta carries more than content: taken by the general path."""
    delta = {"role": "assistant", "content": content, "reasoning_content": None, "tool_calls": None}
    return chunk(delta)


WORDS = ["Hello", ", wörld", " — ", "こんにちは", "! 🚀", " done.", "", 'a "quoted" word']
ESCAPES = ["line\n", "tab\t", 'quote"', "back\\slash", "\\", '\\"', "\u0001", "\u2028", "é"]


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(text_stream(WORDS), id="text"),
        pytest.param(text_stream(ESCAPES * 3), id="escapes"),
        pytest.param(text_stream([f"w{i} " for i in range(300)], "length"), id="long"),
        pytest.param([event(chunk({"role": "assistant", "content": w})) for w in WORDS], id="role"),
        pytest.param([event(sglang_chunk(w)) for w in WORDS + ESCAPES] + [DONE], id="sglang"),
        pytest.param(
            [
                event({**chunk({"content": w}), "usage": usage_chunk(1, i)["usage"]})
                for i, w in enumerate(WORDS)
            ],
            id="usage-every-chunk",
        ),
        pytest.param(
            [event({**chunk({"content": w}), "created": i // 3}) for i, w in enumerate(WORDS * 2)],
            id="created-changes",
        ),
        pytest.param(
            [event(chunk({"content": w})) for w in WORDS[:3]]
            + [event(chunk({"content": None, "tool_calls": [{"index": 0, "id": "c"}]}))]
            + [event(chunk({"content": w})) for w in WORDS[3:]],
            id="other-event-between",
        ),
        pytest.param(
            [event(chunk({"content": "a"})), event(chunk({"content": "b"}), newline=b"\r\n")],
            id="crlf",
        ),
        pytest.param([b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n'] * 3, id="no-index"),
        pytest.param([b'data: {"choices":[{"delta":{"content" : "x"}}]}\n\n'] * 3, id="spaces"),
    ],
)
@pytest.mark.parametrize("frozen", [False, True], ids=["", "frozen"])
def test_streams_give_the_same_facts(stream: list[bytes], frozen: bool) -> None:
    data = b"".join(stream)
    parsed, _ = same(data, frozen=frozen)
    assert parsed
    same(data, CollectBounds(max_content_chars=7), frozen)


def template_line(text: bytes) -> bytes:
    """A content line of `text_stream`'s shape with `text` as its content string's bytes."""
    return b"data: " + orjson.dumps(chunk({"content": "@"})).replace(b"@", text) + b"\n\n"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(b'a","role":"assistant', id="closes-the-string"),
        pytest.param(b'a","extra":"b', id="adds-a-key"),
        pytest.param(b"a\\", id="escapes-the-quote"),
        pytest.param(b'a\\\\"', id="escaped-backslash-then-quote"),
        pytest.param(b"a\x01b", id="control-character"),
        pytest.param(b"a\xffb", id="bad-utf8"),
        pytest.param(b"a\\ud800b", id="lone-surrogate-escape"),
        pytest.param(b'\\u00e9\\n\\"', id="escapes"),
        pytest.param(b'a"},"x":{"y":"', id="nests"),
    ],
)
def test_odd_text_in_a_template_line(text: bytes) -> None:
    good = [template_line(b"one "), template_line(b"two ")]
    same(b"".join([*good, template_line(text), *good, DONE]))
    same(b"".join([template_line(text), *good]))


DUPLICATE_DELTA = b'data: {"choices":[{"delta":{"content":"a"},"delta":{"content":"b"}}]}\n\n'
DUPLICATE_CONTENT = b'data: {"choices":[{"delta":{"content":"a","content":"b"}}]}\n\n'


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param(b'data: {"a":1},{"b":2}\n\n', id="two-objects-one-line"),
        pytest.param(b'data: {"a":1},"x"\n\n', id="object-and-string"),
        pytest.param(b'data: {"choices": [\n\n', id="bad-json"),
        pytest.param(b": keep-alive\n\n", id="comment"),
        pytest.param(b"event: message\n", id="other-field"),
        pytest.param(b"data: [1, 2]\n\n", id="array"),
        pytest.param(b'data: {"error": {"message": "boom"}}\n\n', id="error"),
        pytest.param(b'event: error\ndata: {"message": "boom"}\n\n', id="error-event"),
        pytest.param(b'data: {"choices":\ndata: []}\n\n', id="multi-line-data"),
        pytest.param(DUPLICATE_DELTA, id="dup-delta"),
        pytest.param(DUPLICATE_CONTENT, id="dup-content"),
    ],
)
def test_odd_lines_among_template_lines(odd: bytes) -> None:
    good = [template_line(b"one "), template_line(b"two ")]
    for stream in ([odd, *good], [*good, odd, *good], [*good, odd], [odd, odd, *good, odd]):
        same(b"".join([*stream, DONE]))


def test_random_streams() -> None:
    """Streams of random events, with random bytes spliced into random content strings."""
    rng = random.Random(7)
    pieces = [*WORDS, *ESCAPES, "x" * 40, "\\u0041"]
    for _ in range(400):
        events = []
        for _ in range(rng.randint(0, 12)):
            kind = rng.random()
            if kind < 0.7:
                events.append(event(chunk({"content": rng.choice(pieces)})))
            elif kind < 0.8:
                events.append(event(chunk({}, rng.choice(["stop", "length"]))))
            elif kind < 0.9:
                events.append(event(sglang_chunk(rng.choice(pieces))))
            else:
                events.append(event(usage_chunk(3, rng.randint(0, 9))))
        if events and rng.random() < 0.5:
            at = rng.randrange(len(events))
            line = events[at]
            cut = line.find(b'"content":"') + 11
            if cut > 10:
                splice = rng.choice([b'"', b"\\", b'","', b"\\\\", b"\xc3", b"}", b"\n"])
                events[at] = line[:cut] + splice + line[cut:]
        if rng.random() < 0.5:
            events.append(DONE)
        same(b"".join(events), CollectBounds(max_content_chars=rng.choice([5, 64 * 1024])))


def test_template_lines_are_sliced_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the template: one parse per event that is not a template line (the
    role's, the first content's and its probe, the finish's, the usage's), then one array
    for all the content strings after the first."""
    data = b"".join(text_stream([f"w{i} " for i in range(50)]))
    assembly = _assembly(CollectBounds())
    parsed: list[int] = []
    real_loads = orjson.loads

    def counting(value: bytes | str) -> object:
        parsed.append(len(value))
        return real_loads(value)

    monkeypatch.setattr(orjson, "loads", counting)
    assert parse_templated(decoded(data)[0], assembly)
    monkeypatch.undo()
    assert assembly.content.text() == "".join(f"w{i} " for i in range(50))
    assert len(parsed) == 6

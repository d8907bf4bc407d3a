"""A chat stream's content events read as one template: no dict per event for most of them.

Most events of a chat stream are the same JSON but for the content string:
`{"id":...,"choices":[{"index":0,"delta":{"content":"<TEXT>"},...}],...}`. Once one such
event has been parsed and its content string found in its bytes, every later event that
is the template's prefix, a JSON string's body and the template's suffix is that event
with that string as its content (JSON is context-free: one string token swapped for
another changes nothing else), so those events are only sliced, and their strings decoded
all at once in one C call. A probe parse with another string proves, per template, that
the swapped token is the delta's content and nothing else.

Private to `collect.py`; it reads the events' data as the SSE decoder gave them to its
plain-SSE path (no framing here) and takes the same facts, in the same order, or declines
before taking anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.quality.signals.response_assembly import Assembly, Payload, plain_content

_CONTENT_KEY = re.compile(rb'"content"[ \t]*:[ \t]*"')
_DONE = b"[DONE]"
_TEMPLATE_TRIES = 2
"""Template derivations (a probe parse each) per stream, at most: a stream whose first
events do not share one shape goes to the one-array parse without spending more."""
_UNMATCHED_EVENTS = 4
"""Events parsed one by one, at most, before the first template event."""


@dataclass(frozen=True, slots=True)
class ContentTemplate:
    """One event shape: the data's bytes before and after its content string's body."""

    prefix: bytes
    suffix: bytes
    event: Payload
    """A parse of the template's own, whose delta content is set per event (`take`)."""
    delta: dict[str, Any]
    plain: bool
    """Each event is a plain content delta (`plain_content`): its text is only appended."""

    def take(self, texts: list[str], assembly: Assembly) -> None:
        """The events of consecutive template events with these contents, in order."""
        if self.plain:
            # Appending the joined texts keeps the same text and cut as appending each.
            if not assembly.text_frozen:
                assembly.content.append("".join(texts))
            return
        for text in texts:
            self.delta["content"] = text
            assembly.add_chunk(self.event)


def parse_templated(payloads: list[bytes], assembly: Assembly) -> bool | None:
    """Take the events whose data is `payloads` (as `providers.transport.sse` decodes them;
    each a JSON object or `[DONE]`, else False: not that shape). None: some event did not
    parse on its own, or a template event's text is not a JSON string's body; the caller's
    array parse then decides. Takes nothing unless True.
    """
    steps: list[tuple[int, Payload | ContentTemplate]] = []
    """(template events before it, an event to take or the template of the events after)"""
    texts: list[bytes] = []
    template: ContentTemplate | None = None
    # The decoder ends lines at a CR, so no payload has one: matches none until a template.
    prefix = suffix = b"\r"
    start, stop = 0, -1
    tries, done = _TEMPLATE_TRIES, False
    for payload in payloads:
        if payload.startswith(prefix) and payload.endswith(suffix, start):  # not overlapping
            texts.append(payload[start:stop])
            continue
        if not payload.startswith(b"{"):
            if payload == _DONE:
                done = True
                continue
            return False
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return None
        steps.append((len(texts), event))
        if not texts and (not tries or len(steps) > _UNMATCHED_EVENTS):
            # No two events alike (usage on each, say) or no content yet (tool calls): one
            # array parse is cheaper than more events parsed one by one.
            return None
        # An empty content (the role's chunk that opens most streams) makes no template.
        if tries and (template is None or not texts) and _delta_content(event):
            tries -= 1
            found = _template_of(payload, event)
            if found is not None:
                template, prefix, suffix = found, found.prefix, found.suffix
                start, stop = len(prefix), -len(suffix)
                steps.append((len(texts), found))
    strings = _decoded(texts)
    if strings is None:
        return None
    _take(steps, strings, assembly)
    assembly.done = assembly.done or done
    return True


def _take(
    steps: list[tuple[int, Payload | ContentTemplate]], strings: list[str], assembly: Assembly
) -> None:
    taken = 0
    template: ContentTemplate | None = None
    for upto, step in steps:
        if upto > taken and template is not None:
            template.take(strings[taken:upto], assembly)
        taken = upto
        if isinstance(step, ContentTemplate):
            template = step
        else:
            assembly.add_chunk(step)
    if taken < len(strings) and template is not None:
        template.take(strings[taken:], assembly)


def _decoded(texts: list[bytes]) -> list[str] | None:
    """The texts (JSON string bodies) decoded; None when one is not a string's body."""
    if not texts:
        return []
    joined = b'","'.join(texts)
    if b"\\" in joined or joined.count(b'"') != 2 * (len(texts) - 1):
        # Some text has an escape or a quote: each such one must be one string on its own,
        # or the joined array could split or merge texts.
        for text in texts:
            if (b'"' in text or b"\\" in text) and not _is_string_body(text):
                return None
    try:
        strings = orjson.loads(b'["' + joined + b'"]')
    except orjson.JSONDecodeError:
        return None  # bad UTF-8 or a control character: the array parse says so
    return strings if isinstance(strings, list) else None


def _is_string_body(text: bytes) -> bool:
    try:
        return isinstance(orjson.loads(b'"' + text + b'"'), str)
    except orjson.JSONDecodeError:
        return False


def _delta_content(event: Payload) -> str | None:
    choices = event.get("choices")
    if type(choices) is not list or not choices or type(choices[0]) is not dict:
        return None
    delta = choices[0].get("delta")
    content = delta.get("content") if type(delta) is dict else None
    return content if type(content) is str else None


def _template_of(data: bytes, event: Payload) -> ContentTemplate | None:
    """The event's data as a template around its delta's content string, if a probe
    proves it."""
    found = _CONTENT_KEY.search(data)
    if found is None:
        return None
    start = found.end()
    end = _string_end(data, start)
    if end < 0:
        return None
    prefix, suffix = data[:start], data[end:]
    content = _delta_content(event) or ""
    marked = "\x00" + content  # differs from the content, so the probe sees the token move
    try:
        probe = orjson.loads(prefix + orjson.dumps(marked)[1:-1] + suffix)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(probe, dict) or _delta_content(probe) != marked:
        return None
    delta = probe["choices"][0]["delta"]
    delta["content"] = content
    if probe != event:
        return None  # the token was not the delta's content, or not only that
    return ContentTemplate(prefix, suffix, probe, delta, plain_content(probe) is not None)


def _string_end(data: bytes, start: int) -> int:
    """The index of the quote that closes the string whose body starts at `start`; -1."""
    end = data.find(b'"', start)
    while end >= 0:
        backslashes = 0
        while data[end - 1 - backslashes] == 0x5C:  # "\\"
            backslashes += 1
        if backslashes % 2 == 0:
            return end
        end = data.find(b'"', end + 1)
    return -1

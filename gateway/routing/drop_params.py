"""A backend's `drop_params`: the top-level fields taken out of what it is sent."""

from __future__ import annotations

from dataclasses import replace

import orjson

from providers.base import UpstreamRequest

NATIVE_NAMES = {"stop": "stop_sequences", "reasoning_effort": "thinking", "user": "metadata"}
"""OpenAI's name of a field -> the Messages API's, for a request sent as the client wrote it
(`UpstreamRequest.native`); the other names are the same in both."""


def without_params(request: UpstreamRequest, fields: frozenset[str]) -> UpstreamRequest:
    """`request` without the top-level `fields` its backend must not get (`drop_params`)."""
    if not any(b'"%s"' % field.encode() in request.body for field in fields):
        return request  # none named anywhere in the body: nothing to parse
    body = orjson.loads(request.body)
    if not isinstance(body, dict) or fields.isdisjoint(body):
        return request
    kept = orjson.dumps({k: v for k, v in body.items() if k not in fields})
    marked = request.marked_body
    if marked is not None and isinstance(marked_body := orjson.loads(marked), dict):
        marked = orjson.dumps({k: v for k, v in marked_body.items() if k not in fields})
    native = request.native
    # The client's own request, when it goes as it came: the same fields out, by the
    # names its API gives them.
    doc = orjson.loads(native.body) if native is not None else None
    names = fields | {NATIVE_NAMES[field] for field in fields if field in NATIVE_NAMES}
    if native is not None and isinstance(doc, dict) and not names.isdisjoint(doc):
        body_native = orjson.dumps({k: v for k, v in doc.items() if k not in names})
        native = replace(native, body=body_native)
    return replace(request, body=kept, marked_body=marked, native=native)

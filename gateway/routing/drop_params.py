"""A backend's `drop_params`: the top-level fields taken out of what it is sent."""

from __future__ import annotations

from dataclasses import replace

import orjson

from providers.base import UpstreamRequest


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
    return replace(request, body=kept, marked_body=marked)

"""`POST /v1/messages` on the proxy path: Anthropic's Messages API as a `Dialect`.

The key comes from `x-api-key` (Anthropic's SDKs) or `Authorization: Bearer` (their
`auth_token`). The body becomes an OpenAI chat request and takes the proxy's one path
(routing, accounting and quality read it); a backend that speaks Anthropic's API gets the
client's own request with its `anthropic-version` and `anthropic-beta` headers instead,
and its answer goes back as it came (`native_reply`). From any other backend the answer
comes back as a `message`, or as Anthropic's stream events translated from the relayed
OpenAI chunks.
A request with `cache_control` breakpoints is routed with them (the prefix index counts
them) and sent with them to an Anthropic backend; every other backend gets the request
without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial

import orjson
from starlette.responses import Response

from gateway.config.bounds import BoundsConfig
from gateway.errors import Unauthorized
from gateway.http.anthropic_ingress.errors import error_response
from gateway.http.anthropic_ingress.messages_request import (
    count_cache_breakpoints,
    parse_messages_request,
)
from gateway.http.anthropic_ingress.native_reply import MessagesTranslation, native_request
from gateway.http.anthropic_ingress.request_translation import inexpressible, to_chat_request
from gateway.http.anthropic_ingress.response_translation import reply_context, to_message
from gateway.http.anthropic_ingress.stream_translation import MessageEvents
from gateway.http.dialect import Authorize
from gateway.tenancy.caller import Caller
from providers.errors import ApiError


class MessagesDialect:
    def authorize(self, headers: Mapping[str, str], check: Authorize) -> Caller | None:
        """Either header may carry the gateway's key; a client may send both."""
        api_key = headers.get("x-api-key")
        authorization = headers.get("authorization")
        if api_key is None:
            return check(authorization)
        try:
            return check(f"Bearer {api_key}")
        except Unauthorized:
            if authorization is None:
                raise
            return check(authorization)

    def read(
        self, raw: bytes, bounds: BoundsConfig, headers: Mapping[str, str] | None = None
    ) -> MessagesTranslation:
        request = parse_messages_request(raw, bounds)
        marked = count_cache_breakpoints(request) > 0
        native = native_request(request, raw, headers, marked=marked)
        problem = inexpressible(request)
        if problem is not None:
            # Only a backend of Anthropic's API can serve it, as it came: the translation
            # without those parts is what routing reads; the others refuse it (`required`).
            if native is None:
                raise problem
            native = replace(native, required=problem.message)
        lossy = problem is not None
        plain = orjson.dumps(to_chat_request(request, lossy=lossy))
        translation = MessagesTranslation(
            orjson.dumps(to_chat_request(request, marks=True, lossy=lossy)) if marked else plain,
            context=partial(reply_context, request),
            answer=to_message,
            events=MessageEvents,
            plain_body=plain if marked else None,
        )
        translation.native = native
        return translation

    def error_response(self, exc: ApiError, headers: dict[str, str] | None = None) -> Response:
        return error_response(exc, headers)


MESSAGES = MessagesDialect()

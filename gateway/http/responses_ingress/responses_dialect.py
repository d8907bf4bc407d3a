"""`POST /v1/responses` on the proxy path: OpenAI's Responses API as a `Dialect`.

The key, and every error before a stream starts, are OpenAI's as on the other OpenAI paths
(the OpenAI dialect's). The body becomes an OpenAI chat request and takes the proxy's one
path; the answer comes back as a `response`, or as the typed stream events translated from
the relayed OpenAI chunks, ending with `response.completed` or, after a failure, `error`
and `response.failed`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import orjson
from starlette.responses import Response

from gateway.config.bounds import BoundsConfig
from gateway.http.dialect import OPENAI, Authorize, TranslatedRequest
from gateway.http.responses_ingress.request_translation import to_chat_request
from gateway.http.responses_ingress.response_translation import (
    ReplyContext,
    reply_context,
    to_response,
)
from gateway.http.responses_ingress.responses_request import parse_responses_request
from gateway.http.responses_ingress.stream_translation import ResponseEvents
from gateway.tenancy.caller import Caller
from providers.errors import ApiError


class ResponsesDialect:
    def authorize(self, headers: Mapping[str, str], check: Authorize) -> Caller | None:
        return OPENAI.authorize(headers, check)

    def read(
        self, raw: bytes, bounds: BoundsConfig, headers: Mapping[str, str] | None = None
    ) -> TranslatedRequest[ReplyContext]:
        request = parse_responses_request(raw, bounds)
        return TranslatedRequest(
            orjson.dumps(to_chat_request(request)),
            context=partial(reply_context, request),
            answer=to_response,
            events=ResponseEvents,
        )

    def error_response(self, exc: ApiError, headers: dict[str, str] | None = None) -> Response:
        return OPENAI.error_response(exc, headers)


RESPONSES = ResponsesDialect()

"""`POST /v1/responses` on the proxy path: OpenAI's Responses API as a `Dialect`.

The key, and every error before a stream starts, are OpenAI's as on the other OpenAI paths
(the OpenAI dialect's). The body becomes an OpenAI chat request and takes the proxy's one
path; the answer comes back as a `response`, or as the typed stream events translated from
the relayed OpenAI chunks, ending with `response.completed` or, after a failure, `error`
and `response.failed`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import orjson
from starlette.responses import Response

from gateway.http.dialect import OPENAI, Authorize
from gateway.http.responses import json_response
from gateway.http.responses_ingress.request_translation import to_chat_request
from gateway.http.responses_ingress.response_translation import (
    ReplyContext,
    reply_context,
    to_response,
)
from gateway.http.responses_ingress.responses_request import (
    ResponsesRequest,
    parse_responses_request,
)
from gateway.http.responses_ingress.stream_translation import StreamTranslator
from gateway.http.streaming import StreamOutcome
from providers.base import UpstreamResponse
from providers.errors import ApiError, UpstreamProtocolError

STREAM_MEDIA_TYPE = "text/event-stream"


class ResponsesDialect:
    def authorize(self, headers: Mapping[str, str], check: Authorize) -> str | None:
        return OPENAI.authorize(headers, check)

    def read(self, raw: bytes) -> ResponsesTranslation:
        return ResponsesTranslation(parse_responses_request(raw))

    def error_response(self, exc: ApiError, headers: dict[str, str] | None = None) -> Response:
        return OPENAI.error_response(exc, headers)


class ResponsesTranslation:
    """One Responses request: its OpenAI body, and its answer's way back."""

    __slots__ = ("_request", "body")

    def __init__(self, request: ResponsesRequest) -> None:
        self._request = request
        self.body = orjson.dumps(to_chat_request(request))

    def respond(
        self, response: UpstreamResponse, headers: dict[str, str], prompt_tokens: int
    ) -> Response:
        answer = to_response(response.body, self._context(prompt_tokens))
        return json_response(answer, 200, headers)

    def relay(
        self, chunks: AsyncIterator[bytes], outcome: StreamOutcome, prompt_tokens: int
    ) -> AsyncIterator[bytes]:
        return relay_events(chunks, outcome, StreamTranslator(self._context(prompt_tokens)))

    def stream_media_type(self, upstream: str) -> str:
        return STREAM_MEDIA_TYPE

    def _context(self, prompt_tokens: int) -> ReplyContext:
        return reply_context(self._request, prompt_tokens)


async def relay_events(
    chunks: AsyncIterator[bytes], outcome: StreamOutcome, translator: StreamTranslator
) -> AsyncIterator[bytes]:
    """The Responses events for the relayed OpenAI bytes. The relay's own closing error
    event (it sets `outcome.error` first) ends the response as failed; so does a stream this
    translation cannot read or that ends early, which the gateway then ends itself."""
    try:
        async for chunk in chunks:
            if outcome.error is not None:
                yield translator.fail(outcome.error)
                return
            out = translator.feed(chunk)
            if out:
                yield out
            if translator.failure is not None:
                yield _broken(outcome, translator, translator.failure)
                return
        if not translator.finished:
            early = UpstreamProtocolError("backend ended the stream before its end")
            yield _broken(outcome, translator, early)
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def _broken(
    outcome: StreamOutcome, translator: StreamTranslator, error: UpstreamProtocolError
) -> bytes:
    """The gateway ends a stream it cannot translate: recorded as the relay records its own."""
    outcome.error = error
    outcome.status = error.code or "error"
    return translator.fail(error)


RESPONSES = ResponsesDialect()

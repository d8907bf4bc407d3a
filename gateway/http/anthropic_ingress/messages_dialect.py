"""`POST /v1/messages` on the proxy path: Anthropic's Messages API as a `Dialect`.

The key comes from `x-api-key` (Anthropic's SDKs) or `Authorization: Bearer` (their
`auth_token`); `anthropic-version` and `anthropic-beta` are accepted and ignored. The body
becomes an OpenAI chat request and takes the proxy's one path; the answer comes back as a
`message`, or as Anthropic's stream events translated from the relayed OpenAI chunks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import orjson
from starlette.responses import Response

from gateway.errors import Unauthorized
from gateway.http.anthropic_ingress.errors import error_event, error_response
from gateway.http.anthropic_ingress.messages_request import (
    MessagesRequest,
    parse_messages_request,
)
from gateway.http.anthropic_ingress.request_translation import to_chat_request
from gateway.http.anthropic_ingress.response_translation import ReplyContext, to_message
from gateway.http.anthropic_ingress.stream_translation import StreamTranslator
from gateway.http.dialect import Authorize
from gateway.http.responses import json_response
from gateway.http.streaming import StreamOutcome
from providers.base import UpstreamResponse
from providers.errors import ApiError, UpstreamProtocolError

STREAM_MEDIA_TYPE = "text/event-stream"


class MessagesDialect:
    def authorize(self, headers: Mapping[str, str], check: Authorize) -> str | None:
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

    def read(self, raw: bytes) -> MessagesTranslation:
        return MessagesTranslation(parse_messages_request(raw))

    def error_response(self, exc: ApiError, headers: dict[str, str] | None = None) -> Response:
        return error_response(exc, headers)


class MessagesTranslation:
    """One Messages request: its OpenAI body, and its answer's way back."""

    __slots__ = ("_request", "body")

    def __init__(self, request: MessagesRequest) -> None:
        self._request = request
        self.body = orjson.dumps(to_chat_request(request))

    def respond(
        self, response: UpstreamResponse, headers: dict[str, str], prompt_tokens: int
    ) -> Response:
        message = to_message(response.body, self._context(prompt_tokens))
        return json_response(message, 200, headers)

    def relay(
        self, chunks: AsyncIterator[bytes], outcome: StreamOutcome, prompt_tokens: int
    ) -> AsyncIterator[bytes]:
        return relay_events(chunks, outcome, StreamTranslator(self._context(prompt_tokens)))

    def stream_media_type(self, upstream: str) -> str:
        return STREAM_MEDIA_TYPE

    def _context(self, prompt_tokens: int) -> ReplyContext:
        request = self._request
        return ReplyContext(request.model, request.stop_sequences or (), prompt_tokens)


async def relay_events(
    chunks: AsyncIterator[bytes], outcome: StreamOutcome, translator: StreamTranslator
) -> AsyncIterator[bytes]:
    """Anthropic's events for the relayed OpenAI bytes. The relay's own closing error event
    (it sets `outcome.error` first) becomes an `event: error`; so does a stream this
    translation cannot read or that ends early, which the gateway then ends itself."""
    try:
        async for chunk in chunks:
            if outcome.error is not None:
                yield error_event(outcome.error)
                return
            out = translator.feed(chunk)
            if out:
                yield out
            if translator.failure is not None:
                yield _broken(outcome, translator.failure)
                return
        if not translator.finished:
            early = UpstreamProtocolError("backend ended the stream before its end")
            yield _broken(outcome, early)
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def _broken(outcome: StreamOutcome, error: UpstreamProtocolError) -> bytes:
    """The gateway ends a stream it cannot translate: recorded as the relay records its own."""
    outcome.error = error
    outcome.status = error.code or "error"
    return error_event(error)


MESSAGES = MessagesDialect()

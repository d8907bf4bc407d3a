"""OpenAI chat chunks as Anthropic's stream events, translated as they arrive.

The first chunk opens the message (`message_start`); reasoning, text and each tool call
become content blocks in the order they begin (`content_block_start`, their deltas:
`thinking_delta`, `text_delta`, `input_json_delta`, then `content_block_stop` when the next
kind begins); `[DONE]` closes the last block and sends `message_delta` (stop reason and
usage, from the usage chunk the gateway asks for) and `message_stop`. A backend's error
event becomes an `event: error`. Nothing is buffered beyond an unfinished SSE line.
"""

from __future__ import annotations

from typing import Literal

import orjson
from pydantic import ValidationError

from gateway.http.anthropic_ingress.errors import error_event
from gateway.http.anthropic_ingress.messages_reply import ContentBlock, Message, event
from gateway.http.anthropic_ingress.openai_reply import ChatReply, MessageOut, ToolCallOut
from gateway.http.anthropic_ingress.response_translation import (
    ReplyContext,
    anthropic_usage,
    message_id,
    stop_reason,
)
from providers.anthropic.sse_decoder import SseDecodeError, SseDecoder
from providers.errors import UpstreamError, UpstreamProtocolError
from providers.usage import Usage, usage_of

_DONE = b"[DONE]"

BlockKind = Literal["text", "thinking"] | int
"""A text or thinking block, or the tool call (by its OpenAI index) a tool_use block holds."""


class StreamTranslator:
    """One stream's translation. `finished` once the message (or a backend's error event)
    has been translated; `failure` when the backend's bytes could not be read."""

    def __init__(self, context: ReplyContext) -> None:
        self._context = context
        self._sse = SseDecoder()
        self._started = False
        self._open: tuple[int, BlockKind] | None = None
        self._blocks = 0
        self._tools: dict[int, int] = {}
        """OpenAI tool call index -> the tool_use block's index."""
        self._finish: tuple[str | None, str | int | None] = (None, None)
        self._usage: Usage | None = None
        self._deltas = 0
        self.finished = False
        self.failure: UpstreamProtocolError | None = None

    def feed(self, data: bytes) -> bytes:
        """The events for the chunks `data` completes (often none). Unreadable data sets
        `failure`; what was translated before it is still returned."""
        out: list[bytes] = []
        try:
            for payload in self._sse.feed(data):
                if self.finished:
                    break
                out.append(self._translate(payload))
        except SseDecodeError as exc:
            self.failure = UpstreamProtocolError(f"backend sent a malformed stream: {exc}")
        except UpstreamProtocolError as exc:
            self.failure = exc
        return b"".join(out)

    def _translate(self, payload: bytes) -> bytes:
        if payload == _DONE:
            return self._start(None) + self._message_end()
        try:
            document = orjson.loads(payload)
            chunk = ChatReply.model_validate(document)
        except (orjson.JSONDecodeError, ValidationError):
            raise UpstreamProtocolError("backend sent an unreadable stream chunk") from None
        if chunk.error is not None:
            self.finished = True
            detail = chunk.error if isinstance(chunk.error, str) else chunk.error.message
            return error_event(UpstreamError(f"backend ended the stream: {detail}"))
        out = self._start(chunk)
        self._usage = usage_of(document) or self._usage
        choice = chunk.first
        if choice is not None:
            out += self._delta(choice.delta)
            if choice.finish_reason is not None:
                self._finish = (choice.finish_reason, choice.stop_reason)
        return out

    def _start(self, chunk: ChatReply | None) -> bytes:
        if self._started:
            return b""
        self._started = True
        context = self._context
        message: Message = {
            "id": message_id(chunk.id if chunk is not None else ""),
            "type": "message",
            "role": "assistant",
            "model": (chunk.model if chunk is not None else "") or context.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": anthropic_usage(None, prompt_tokens=context.prompt_tokens, output_tokens=0),
        }
        return event("message_start", {"type": "message_start", "message": message})

    def _delta(self, delta: MessageOut) -> bytes:
        out = b""
        thinking = delta.thinking
        if thinking:
            out += self._into("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            out += self._block_delta({"type": "thinking_delta", "thinking": thinking})
        if delta.content:
            out += self._into("text", {"type": "text", "text": ""})
            out += self._block_delta({"type": "text_delta", "text": delta.content})
        for call in delta.tool_calls or ():
            out += self._tool_call(call)
        if out:
            self._deltas += 1
        return out

    def _tool_call(self, call: ToolCallOut) -> bytes:
        out = b""
        index = self._tools.get(call.index)
        if index is None:
            block: ContentBlock = {
                "type": "tool_use",
                "id": call.id or f"toolu_{self._blocks}",
                "name": call.function.name or "",
                "input": {},
            }
            out += self._into(call.index, block)
            index = self._tools[call.index] = self._blocks - 1
        if call.function.arguments:
            partial = {"type": "input_json_delta", "partial_json": call.function.arguments}
            out += self._block_delta(partial, index)
        return out

    def _into(self, kind: BlockKind, block: ContentBlock) -> bytes:
        """Start a block of `kind` unless one is open; closes the one open before."""
        if self._open is not None and self._open[1] == kind:
            return b""
        out = self._close_block()
        index = self._blocks
        self._blocks += 1
        self._open = (index, kind)
        start = {"type": "content_block_start", "index": index, "content_block": block}
        return out + event("content_block_start", start)

    def _block_delta(self, delta: dict[str, str], index: int | None = None) -> bytes:
        if index is None:
            assert self._open is not None
            index = self._open[0]
        data = {"type": "content_block_delta", "index": index, "delta": delta}
        return event("content_block_delta", data)

    def _close_block(self) -> bytes:
        if self._open is None:
            return b""
        index, self._open = self._open[0], None
        return event("content_block_stop", {"type": "content_block_stop", "index": index})

    def _message_end(self) -> bytes:
        self.finished = True
        context = self._context
        finish, matched = self._finish
        reason, sequence = stop_reason(finish, matched, context.stop_sequences)
        usage = anthropic_usage(
            self._usage, prompt_tokens=context.prompt_tokens, output_tokens=self._deltas
        )
        delta = {"stop_reason": reason, "stop_sequence": sequence}
        return (
            self._close_block()
            + event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
            + event("message_stop", {"type": "message_stop"})
        )

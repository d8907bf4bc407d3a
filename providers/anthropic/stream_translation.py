"""Anthropic's stream events as OpenAI `chat.completion.chunk` events, one read at a time.

Nothing is buffered beyond an unfinished event: each upstream read becomes the chunks of
the events it completes. `message_start` gives the role chunk, text, thinking and tool
input deltas give content, reasoning_content and tool_calls deltas, `message_delta` the
finish reason, and `message_stop` the usage chunk (when asked for) and `data: [DONE]`.
An `error` event raises its UpstreamError, which the host relays as an error event.
"""

from __future__ import annotations

import orjson
from pydantic import ValidationError

from providers.anthropic.chat_response import (
    ChatCompletionChunk,
    DeltaOut,
    ToolCallDeltaOut,
    UsageOut,
)
from providers.anthropic.error_mapping import ErrorMapper
from providers.anthropic.messages_wire import (
    BlockDelta,
    BlockStart,
    ErrorBody,
    InputJsonDelta,
    MessageDelta,
    MessageStart,
    MessageStop,
    MessagesUsage,
    StreamEvent,
    StreamEventEnvelope,
    TextDelta,
    TextOut,
    ThinkingDelta,
    ThinkingOut,
    ToolUseOut,
)
from providers.anthropic.response_translation import finish_reason, openai_usage
from providers.errors import UpstreamError
from providers.native import NativeEvents
from providers.transport.sse import SseDecodeError, SseDecoder

DONE = b"data: [DONE]\n\n"


class StreamTranslator:
    """One response's translation; `finished` once `message_stop` has been translated."""

    def __init__(
        self,
        errors: ErrorMapper,
        *,
        include_usage: bool,
        created: int,
        native: NativeEvents | None = None,
    ) -> None:
        """`native`: where each event read goes as well, as it came (an error event
        excepted: the host ends a failed stream with its own)."""
        self._errors = errors
        self._native = native
        self._include_usage = include_usage
        self._created = created
        self._sse = SseDecoder()
        self._head: MessageStart | None = None
        self._usage = MessagesUsage()
        self._tool_calls: dict[int, int] = {}
        """Anthropic's block index of each tool_use block -> its OpenAI tool call index."""
        self._finish_reason: str | None = None
        self._failure: UpstreamError | None = None
        self.finished = False

    def feed(self, data: bytes) -> bytes:
        """The OpenAI SSE bytes for the events `data` completes (often none).

        A broken stream raises its UpstreamError, but not before what preceded the break
        in the same read has been taken: then that comes back, and `raise_failure()`
        raises the error after it has been relayed.
        """
        try:
            payloads = self._sse.feed(data)
        except SseDecodeError as exc:
            raise self._errors.protocol_error(f"sent a malformed stream: {exc}") from None
        self.raise_failure()
        out: list[bytes] = []
        for payload in payloads:
            try:
                out.append(self._translate(payload))
            except UpstreamError as exc:
                self._failure = exc
                break
        translated = b"".join(out)
        if not translated:
            self.raise_failure()
        return translated

    def raise_failure(self) -> None:
        """Raise the error that broke the stream, if one did."""
        if self._failure is not None:
            raise self._failure

    def _translate(self, payload: bytes) -> bytes:
        if self.finished:
            return b""
        try:
            event = StreamEventEnvelope.model_validate_json(payload).root
        except ValidationError:
            raise self._errors.protocol_error("sent an unreadable stream event") from None
        if isinstance(event, ErrorBody):
            raise self._errors.stream_error(event.error)
        if self._native is not None:
            self._native.add(event.type, payload)
        if isinstance(event, MessageStart):
            self._head = event
            self._usage = event.message.usage
            return self._chunk({"role": "assistant", "content": ""})
        if self._head is None:
            if event.type == "ping":
                return b""
            raise self._errors.protocol_error(f"sent {event.type} before message_start")
        return self._after_start(event)

    def _after_start(self, event: StreamEvent) -> bytes:
        if isinstance(event, BlockStart):
            return self._block_start(event)
        if isinstance(event, BlockDelta):
            return self._block_delta(event)
        if isinstance(event, MessageDelta):
            return self._message_delta(event)
        if isinstance(event, MessageStop):
            return self._message_stop()
        # ping, content_block_stop, and event types added after this was written.
        return b""

    def _block_start(self, event: BlockStart) -> bytes:
        block = event.content_block
        if isinstance(block, ToolUseOut):
            index = self._tool_calls[event.index] = len(self._tool_calls)
            call: ToolCallDeltaOut = {
                "index": index,
                "id": block.id,
                "type": "function",
                "function": {"name": block.name, "arguments": ""},
            }
            return self._chunk({"tool_calls": [call]})
        # Text and thinking blocks start empty in practice; relay a head start if not.
        if isinstance(block, TextOut) and block.text:
            return self._chunk({"content": block.text})
        if isinstance(block, ThinkingOut) and block.thinking:
            return self._chunk({"reasoning_content": block.thinking})
        return b""

    def _block_delta(self, event: BlockDelta) -> bytes:
        delta = event.delta
        if isinstance(delta, TextDelta):
            return self._chunk({"content": delta.text})
        if isinstance(delta, ThinkingDelta):
            return self._chunk({"reasoning_content": delta.thinking})
        if isinstance(delta, InputJsonDelta) and delta.partial_json:
            index = self._tool_calls.get(event.index)
            if index is None:
                raise self._errors.protocol_error("sent tool input for a block that is no tool")
            more: ToolCallDeltaOut = {"index": index, "function": {"arguments": delta.partial_json}}
            return self._chunk({"tool_calls": [more]})
        # signature_delta (the thinking's signature) and citations have no OpenAI field.
        return b""

    def _message_delta(self, event: MessageDelta) -> bytes:
        # message_delta's usage is cumulative: each count it carries replaces the last.
        update = event.usage.model_dump(exclude_none=True)
        self._usage = self._usage.model_copy(update=update)
        if event.delta.stop_reason is None or self._finish_reason is not None:
            return b""
        self._finish_reason = finish_reason(event.delta.stop_reason)
        return self._chunk({}, self._finish_reason)

    def _message_stop(self) -> bytes:
        self.finished = True
        out = b""
        if self._finish_reason is None:
            self._finish_reason = "stop"
            out += self._chunk({}, self._finish_reason)
        if self._include_usage:
            out += self._usage_chunk(openai_usage(self._usage))
        return out + DONE

    def _chunk(self, delta: DeltaOut, finish: str | None = None) -> bytes:
        chunk = self._frame()
        chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
        if self._include_usage:
            chunk["usage"] = None
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    def _usage_chunk(self, usage: UsageOut) -> bytes:
        chunk = self._frame()
        chunk["usage"] = usage
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    def _frame(self) -> ChatCompletionChunk:
        assert self._head is not None, "chunks are only built after message_start"
        message = self._head.message
        return {
            "id": message.id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": message.model,
            "choices": [],
        }

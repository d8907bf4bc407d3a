"""OpenAI chat chunks as Anthropic's stream events, translated as they arrive
(`ClientEvents` for `gateway.http.relay.translated`, which reads the chunks).

The first chunk opens the message (`message_start`); reasoning, text and each tool call
become content blocks in the order they begin (`content_block_start`, their deltas:
`thinking_delta`, `text_delta`, `input_json_delta`, then `content_block_stop` when the next
kind begins); `[DONE]` closes the last block and sends `message_delta` (stop reason and
usage, from the usage chunk the gateway asks for) and `message_stop`. A failure, the
backend's error event among them, becomes an `event: error`.
"""

from __future__ import annotations

from typing import Literal

from gateway.http.anthropic_ingress.errors import error_event
from gateway.http.anthropic_ingress.messages_reply import ContentBlock, Message, event
from gateway.http.anthropic_ingress.response_translation import (
    ReplyContext,
    anthropic_usage,
    message_id,
    stop_reason,
)
from gateway.http.openai_reply import ChatReply, MessageOut, ToolCallOut
from gateway.http.relay.translated import StreamSummary
from providers.errors import ApiError

BlockKind = Literal["text", "thinking"] | int
"""A text or thinking block, or the tool call (by its OpenAI index) a tool_use block holds."""


class MessageEvents:
    """Anthropic's events for one stream."""

    def __init__(self, context: ReplyContext) -> None:
        self._context = context
        self._started = False
        self._open: tuple[int, BlockKind] | None = None
        self._blocks = 0
        self._tools: dict[int, int] = {}
        """OpenAI tool call index -> the tool_use block's index."""

    def start(self, chunk: ChatReply | None) -> bytes:
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

    def delta(self, delta: MessageOut) -> bytes:
        out = b""
        thinking = delta.thinking
        if thinking:
            out += self._into("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            out += self._block_delta({"type": "thinking_delta", "thinking": thinking})
        if delta.content:
            out += self.text(delta.content)
        for call in delta.tool_calls or ():
            out += self._tool_call(call)
        return out

    def text(self, text: str) -> bytes:
        out = self._into("text", {"type": "text", "text": ""})
        return out + self._block_delta({"type": "text_delta", "text": text})

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

    def end(self, summary: StreamSummary) -> bytes:
        context = self._context
        reason, sequence = stop_reason(
            summary.finish_reason, summary.stop_reason, context.stop_sequences
        )
        usage = anthropic_usage(
            summary.usage, prompt_tokens=context.prompt_tokens, output_tokens=summary.output_chunks
        )
        delta = {"stop_reason": reason, "stop_sequence": sequence}
        return (
            self._close_block()
            + event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
            + event("message_stop", {"type": "message_stop"})
        )

    def fail(self, error: ApiError) -> bytes:
        return error_event(error)

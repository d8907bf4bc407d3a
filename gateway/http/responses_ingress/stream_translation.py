"""OpenAI chat chunks as the Responses API's stream events, translated as they arrive.

The first chunk sends `response.created` and `response.in_progress`. Reasoning, text and
each tool call become output items in the order they begin, each opened with
`response.output_item.added` (and its part's `...part.added`), fed by its deltas
(`response.reasoning_summary_text.delta`, `response.output_text.delta`,
`response.function_call_arguments.delta`) and closed, when the next item begins, with its
`.done` events and `response.output_item.done`. `[DONE]` closes the last item and sends
`response.completed` (or `response.incomplete`, when the answer was cut at
`max_output_tokens`) with the usage of the chunk the gateway asks for. A failure, the
backend's error event among them, sends `error` and then `response.failed`. Every event
carries its `sequence_number`.

These are `ClientEvents` for `gateway.http.relay.translated`, which reads the chunks. The
texts are kept, since the `.done` events and the last `response` repeat them (bounded:
MAX_KEPT_CHARS).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from gateway.http.openai_reply import ChatReply, MessageOut, ToolCallOut
from gateway.http.relay.translated import StreamSummary
from gateway.http.responses_ingress.response_object import (
    ItemStatus,
    OutputItem,
    OutputText,
    SummaryText,
    event,
    new_id,
)
from gateway.http.responses_ingress.response_translation import (
    ReplyContext,
    function_call_item,
    response_object,
    responses_usage,
    status_of,
)
from providers.errors import ApiError, UpstreamProtocolError

MAX_KEPT_CHARS = 16 * 1024 * 1024
"""Text, reasoning and arguments kept per stream for the events that repeat them; a longer
answer ends the stream with an error rather than growing without bound."""

ItemKind = Literal["reasoning", "message"] | int
"""A reasoning or message item, or the tool call (by its OpenAI index) a function_call holds."""


@dataclass(slots=True)
class _OpenItem:
    kind: ItemKind
    output_index: int
    item: OutputItem
    """The item as the final `response` lists it; completed when it closes."""
    parts: list[str] = field(default_factory=list)

    @property
    def ids(self) -> dict[str, object]:
        return {"item_id": self.item["id"], "output_index": self.output_index}


class ResponseEvents:
    """The Responses API's events for one stream. Once the response has completed or
    failed, it stays so: a later failure sends nothing."""

    def __init__(self, context: ReplyContext) -> None:
        self._context = context
        self._sequence = 0
        self._started = False
        self._ended = False
        self._output: list[OutputItem] = []
        self._open: _OpenItem | None = None
        self._calls: dict[int, str] = {}
        """The OpenAI index of each tool call seen -> its call_id."""
        self._kept_chars = 0

    def fail(self, error: ApiError) -> bytes:
        """`error` and `response.failed`, whose output holds what was sent before (an
        unfinished item as `incomplete`)."""
        if self._ended:
            return b""
        self._ended = True
        out = self.start(None)
        if self._open is not None:
            self._settle(self._open, "incomplete")
            self._open = None
        detail = {"code": error.code, "message": error.message, "param": error.param}
        failed = response_object(
            self._context,
            "failed",
            self._output,
            None,
            error={"code": "server_error", "message": error.message},
        )
        return (
            out
            + self._event("error", detail)
            + self._event("response.failed", {"response": failed})
        )

    def start(self, chunk: ChatReply | None) -> bytes:
        if self._started:
            return b""
        self._started = True
        response = response_object(self._context, "in_progress", [], None)
        return self._event("response.created", {"response": response}) + self._event(
            "response.in_progress", {"response": response}
        )

    def delta(self, delta: MessageOut) -> bytes:
        out = b""
        if delta.thinking:
            out += self._text("reasoning", delta.thinking)
        if delta.content:
            out += self._text("message", delta.content)
        for call in delta.tool_calls or ():
            out += self._call(call)
        return out

    def text(self, text: str) -> bytes:
        return self._text("message", text)

    def _text(self, kind: Literal["reasoning", "message"], text: str) -> bytes:
        out = b""
        if self._open is None or self._open.kind != kind:
            out += self._close("completed") + self._add(kind)
        assert self._open is not None
        self._keep(self._open, text)
        if kind == "reasoning":
            fields = {**self._open.ids, "summary_index": 0, "delta": text}
            return out + self._event("response.reasoning_summary_text.delta", fields)
        fields = {**self._open.ids, "content_index": 0, "delta": text, "logprobs": []}
        return out + self._event("response.output_text.delta", fields)

    def _call(self, call: ToolCallOut) -> bytes:
        out = b""
        known = self._calls.get(call.index)
        # A new id at a known index is a new call (backends that send each call whole).
        if known is None or (call.id is not None and call.id != known):
            out += self._close("completed") + self._add_call(call)
        elif self._open is None or self._open.kind != call.index:
            raise UpstreamProtocolError("backend interleaved the fragments of its tool calls")
        assert self._open is not None
        if call.function.arguments:
            self._keep(self._open, call.function.arguments)
            fields = {**self._open.ids, "delta": call.function.arguments}
            out += self._event("response.function_call_arguments.delta", fields)
        return out

    def _add(self, kind: Literal["reasoning", "message"]) -> bytes:
        index = len(self._output)
        item: OutputItem
        if kind == "reasoning":
            item = {"id": new_id("rs"), "type": "reasoning", "summary": []}
            part_event = "response.reasoning_summary_part.added"
            part: dict[str, object] = {"summary_index": 0, "part": _summary("")}
        else:
            item = {
                "id": new_id("msg"),
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            part_event = "response.content_part.added"
            part = {"content_index": 0, "part": _output_text("")}
        out = self._open_item(kind, index, item)
        assert self._open is not None
        return out + self._event(part_event, {**self._open.ids, **part})

    def _add_call(self, call: ToolCallOut) -> bytes:
        item = function_call_item(call, "", "in_progress")
        self._calls[call.index] = item["call_id"]
        return self._open_item(call.index, len(self._output), item)

    def _open_item(self, kind: ItemKind, index: int, item: OutputItem) -> bytes:
        self._output.append(item)
        self._open = _OpenItem(kind, index, item)
        return self._event("response.output_item.added", {"output_index": index, "item": item})

    def _close(self, status: ItemStatus) -> bytes:
        """The open item's `.done` events, if one is open."""
        open_item, self._open = self._open, None
        if open_item is None:
            return b""
        text = self._settle(open_item, status)
        ids = open_item.ids
        item = open_item.item
        if item["type"] == "reasoning":
            out = self._event(
                "response.reasoning_summary_text.done", {**ids, "summary_index": 0, "text": text}
            )
            out += self._event(
                "response.reasoning_summary_part.done",
                {**ids, "summary_index": 0, "part": _summary(text)},
            )
        elif item["type"] == "message":
            done = {**ids, "content_index": 0, "text": text, "logprobs": []}
            out = self._event("response.output_text.done", done)
            out += self._event(
                "response.content_part.done",
                {**ids, "content_index": 0, "part": _output_text(text)},
            )
        else:
            out = self._event("response.function_call_arguments.done", {**ids, "arguments": text})
        done_item = {"output_index": open_item.output_index, "item": item}
        return out + self._event("response.output_item.done", done_item)

    def _settle(self, open_item: _OpenItem, status: ItemStatus) -> str:
        """Complete the item with what it received; its whole text."""
        text = "".join(open_item.parts)
        item = open_item.item
        if item["type"] == "reasoning":
            item["summary"] = [_summary(text)]
        elif item["type"] == "message":
            item["content"], item["status"] = [_output_text(text)], status
        else:
            item["arguments"], item["status"] = text, status
        return text

    def end(self, summary: StreamSummary) -> bytes:
        self._ended = True
        status, incomplete = status_of(summary.finish_reason)
        out = self._close("incomplete" if status == "incomplete" else "completed")
        usage = responses_usage(
            summary.usage,
            prompt_tokens=self._context.prompt_tokens,
            output_tokens=summary.output_chunks,
        )
        response = response_object(
            self._context, status, self._output, usage, incomplete=incomplete
        )
        kind = "response.completed" if status == "completed" else "response.incomplete"
        return out + self._event(kind, {"response": response})

    def _keep(self, open_item: _OpenItem, text: str) -> None:
        self._kept_chars += len(text)
        if self._kept_chars > MAX_KEPT_CHARS:
            raise UpstreamProtocolError(f"backend's answer exceeds {MAX_KEPT_CHARS} characters")
        open_item.parts.append(text)

    def _event(self, kind: str, fields: Mapping[str, object]) -> bytes:
        data = {"type": kind, **fields, "sequence_number": self._sequence}
        self._sequence += 1
        return event(kind, data)


def _summary(text: str) -> SummaryText:
    return {"type": "summary_text", "text": text}


def _output_text(text: str) -> OutputText:
    return {"type": "output_text", "text": text, "annotations": []}

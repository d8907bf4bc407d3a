"""An OpenAI chat completion as a `response`: output items, status and usage.

The status, the usage arithmetic and the `response` frame here serve the stream
translation too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gateway.http.openai_reply import ChoiceOut, ToolCallOut, read_completion
from gateway.http.responses_ingress.response_object import (
    FunctionCallItem,
    IncompleteDetails,
    ItemStatus,
    OutputItem,
    OutputText,
    RequestEcho,
    ResponseError,
    ResponseObject,
    ResponseUsage,
    Status,
    SummaryText,
    new_id,
)
from gateway.http.responses_ingress.responses_request import ResponsesRequest
from providers.usage import Usage


@dataclass(frozen=True, slots=True)
class ReplyContext:
    """What answering a request needs of it; one per request."""

    response_id: str
    created_at: int
    echo: RequestEcho
    prompt_tokens: int
    """The gateway's estimate, for a backend that reports no usage."""


def reply_context(request: ResponsesRequest, prompt_tokens: int) -> ReplyContext:
    return ReplyContext(new_id("resp"), int(time.time()), echo_of(request), prompt_tokens)


def echo_of(request: ResponsesRequest) -> RequestEcho:
    reasoning = request.reasoning
    text_format = request.text.format if request.text is not None else None
    choice = request.tool_choice or "auto"
    return {
        "model": request.model,
        "instructions": request.instructions,
        "max_output_tokens": request.max_output_tokens,
        "metadata": dict(request.metadata or {}),
        "parallel_tool_calls": request.parallel_tool_calls is not False,
        "reasoning": {
            "effort": reasoning.effort if reasoning is not None else None,
            "summary": reasoning.summary if reasoning is not None else None,
        },
        "temperature": request.temperature,
        "text": {
            "format": text_format.model_dump(by_alias=True, exclude_none=True)
            if text_format is not None
            else {"type": "text"}
        },
        "tool_choice": choice if isinstance(choice, str) else choice.model_dump(),
        "tools": [tool.model_dump() for tool in request.tools],
        "top_p": request.top_p,
        "user": request.user,
    }


def response_object(
    context: ReplyContext,
    status: Status,
    output: list[OutputItem],
    usage: ResponseUsage | None,
    *,
    incomplete: IncompleteDetails | None = None,
    error: ResponseError | None = None,
) -> ResponseObject:
    return {
        "id": context.response_id,
        "object": "response",
        "created_at": context.created_at,
        **context.echo,
        "status": status,
        "error": error,
        "incomplete_details": incomplete,
        "output": output,
        "usage": usage,
        "previous_response_id": None,
        "store": False,
        "background": False,
        "truncation": "disabled",
    }


def status_of(finish_reason: str | None) -> tuple[Status, IncompleteDetails | None]:
    """OpenAI's `finish_reason` as a response's status: `length` and `content_filter`
    leave it incomplete, anything else completed."""
    if finish_reason == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if finish_reason == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


def responses_usage(
    usage: Usage | None, *, prompt_tokens: int, output_tokens: int
) -> ResponseUsage:
    """The backend's counts in the Responses API's names; the estimates stand in when it
    reports nothing."""
    if usage is None:
        usage = Usage(prompt_tokens, output_tokens, cached_tokens=None)
    out: ResponseUsage = {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens or 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }
    if usage.cache_write_tokens is not None:
        out["input_tokens_details"]["cache_write_tokens"] = usage.cache_write_tokens
    return out


def function_call_item(call: ToolCallOut, arguments: str, status: ItemStatus) -> FunctionCallItem:
    return {
        "id": new_id("fc"),
        "type": "function_call",
        "status": status,
        "call_id": call.id or new_id("call"),
        "name": call.function.name or "",
        "arguments": arguments,
    }


def to_response(body: bytes, context: ReplyContext) -> ResponseObject:
    """The whole answer; raises UpstreamProtocolError if the body is no chat completion."""
    _, choice, counts = read_completion(body)
    status, incomplete = status_of(choice.finish_reason)
    usage = responses_usage(counts, prompt_tokens=context.prompt_tokens, output_tokens=0)
    output = _output(choice, "incomplete" if status == "incomplete" else "completed")
    return response_object(context, status, output, usage, incomplete=incomplete)


def _output(choice: ChoiceOut, status: ItemStatus) -> list[OutputItem]:
    message = choice.message
    output: list[OutputItem] = []
    if message.thinking:
        summary: SummaryText = {"type": "summary_text", "text": message.thinking}
        output.append({"id": new_id("rs"), "type": "reasoning", "summary": [summary]})
    calls = message.tool_calls or ()
    if message.content or not calls:
        text: OutputText = {"type": "output_text", "text": message.content or "", "annotations": []}
        output.append(
            {
                "id": new_id("msg"),
                "type": "message",
                "status": status,
                "role": "assistant",
                "content": [text],
            }
        )
    output.extend(function_call_item(c, c.function.arguments or "", "completed") for c in calls)
    return output

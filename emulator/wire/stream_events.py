"""The SSE events of a streamed response, each tagged with the decode step it belongs to."""

from __future__ import annotations

from collections.abc import Callable

from emulator.content.generation import ChoiceOutput
from emulator.wire.openai_bodies import (
    DONE_EVENT,
    ChunkFrame,
    Json,
    Payload,
    chat_logprob,
    legacy_logprobs,
)

# (decode step, payload): step 0 is due at the first token, step k one decode step later.
StepEvent = tuple[int, Payload]
# Usage, asked for when the last step is due: a batched engine knows cached tokens late.
UsageSource = Callable[[], Json]


def chat_events(
    frame: ChunkFrame,
    choices: list[ChoiceOutput],
    top_logprobs: int | None,
    final_usage: UsageSource | None,
) -> list[StepEvent]:
    """Chat chunks as OpenAI sends them: role first, then content or tool-call fragments."""
    per_choice = [_chat_steps(choice, top_logprobs) for choice in choices]
    return _finish(frame, _interleave(frame, per_choice), final_usage)


def completion_events(
    frame: ChunkFrame,
    choices: list[ChoiceOutput],
    top_logprobs: int | None,
    final_usage: UsageSource | None,
) -> list[StepEvent]:
    per_choice = [_completion_steps(choice, top_logprobs) for choice in choices]
    return _finish(frame, _interleave(frame, per_choice), final_usage)


def _chat_steps(choice: ChoiceOutput, top_logprobs: int | None) -> list[list[Json]]:
    """Role first; reasoning (vLLM's ``reasoning_content``) before the answer; a tool
    call's id and name open it, with the role or, after reasoning, with its arguments."""
    index, call, salt = choice.index, choice.tool_call, choice.logprob_salt
    opening: Json = {"role": "assistant", "content": ""}
    if call is None:
        steps = [
            [_chunk(index, {"content": piece}, _stream_logprobs(piece, top_logprobs, salt))]
            for piece in choice.answer
        ]
    else:
        head = {"index": 0, "id": call.id, "type": "function"}
        named: Json = {"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]}
        steps = [
            [_chunk(index, {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})]
            for piece in choice.answer
        ]
        if choice.thinking_pieces:
            steps = _bracket(steps, _chunk(index, named), None)
        else:
            opening = {"role": "assistant", "content": None, **named}
    reasoning = [[_chunk(index, {"reasoning_content": piece})] for piece in choice.thinking]
    closing = _chunk(index, {}, None, choice.finish_reason)
    return _bracket(reasoning + steps, _chunk(index, opening), closing)


def _completion_steps(choice: ChoiceOutput, top_logprobs: int | None) -> list[list[Json]]:
    index = choice.index
    steps: list[list[Json]] = []
    offset = 0
    for piece in choice.pieces:
        logprobs = None
        if top_logprobs is not None:
            logprobs = legacy_logprobs([piece], top_logprobs, offset, choice.logprob_salt)
        steps.append([_text_chunk(index, piece, logprobs, None)])
        offset += len(piece)
    return _bracket(steps, None, _text_chunk(index, "", None, choice.finish_reason))


def _bracket(
    steps: list[list[Json]], opening: Json | None, closing: Json | None
) -> list[list[Json]]:
    """Put the opening chunk with the first token and the finish chunk with the last one."""
    if not steps:
        steps = [[]]
    if opening is not None:
        steps[0].insert(0, opening)
    if closing is not None:
        steps[-1].append(closing)
    return steps


def _chunk(
    index: int, delta: Json, logprobs: Json | None = None, finish_reason: str | None = None
) -> Json:
    return {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}


def _text_chunk(index: int, text: str, logprobs: Json | None, finish_reason: str | None) -> Json:
    return {"index": index, "text": text, "logprobs": logprobs, "finish_reason": finish_reason}


def _stream_logprobs(piece: str, top_logprobs: int | None, salt: bytes) -> Json | None:
    if top_logprobs is None:
        return None
    return {"content": [chat_logprob(piece, top_logprobs, salt)], "refusal": None}


def _interleave(frame: ChunkFrame, per_choice: list[list[list[Json]]]) -> list[StepEvent]:
    """Choices advance in lockstep, one chunk per choice per step, as a batched engine would."""
    longest = max((len(steps) for steps in per_choice), default=0)
    return [
        (step, frame.event(chunk))
        for step in range(longest)
        for steps in per_choice
        if step < len(steps)
        for chunk in steps[step]
    ]


def _finish(
    frame: ChunkFrame, events: list[StepEvent], final_usage: UsageSource | None
) -> list[StepEvent]:
    last = events[-1][0] if events else 0
    if final_usage is not None:
        source = final_usage
        events.append((last, lambda: frame.usage_event(source())))
    events.append((last, DONE_EVENT))
    return events

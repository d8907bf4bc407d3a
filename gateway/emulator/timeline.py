"""One response's timeline under either cost model: when each decode step is due, and usage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.emulator.generation import ChoiceOutput
from gateway.emulator.pacing import LinearPacer, Pacer, SequencePacer
from gateway.emulator.prompt_blocks import render_chat, render_completion
from gateway.emulator.request_parsing import BadRequest, GenerationRequest
from gateway.emulator.runtime_state import BatchedEngine, EmulatorRuntime
from gateway.emulator.scheduler import EngineSequence
from gateway.emulator.stream_events import UsageSource
from gateway.emulator.wire_format import Json, usage


@dataclass(frozen=True, slots=True)
class Timeline:
    """Decode step ``k`` is due at ``first + k * step`` in ``pacer``'s unit."""

    pacer: Pacer
    first: float
    step: float
    usage: UsageSource

    def offset(self, step: int) -> float:
        return self.first + step * self.step

    def last_offset(self, choices: list[ChoiceOutput]) -> float:
        """When the longest choice is complete: a non-streamed body is ready then."""
        steps = max((len(choice.pieces) for choice in choices), default=1)
        return self.offset(max(0, steps - 1))


def plan_timeline(
    runtime: EmulatorRuntime,
    body: dict[str, Any],
    generation: GenerationRequest,
    choices: list[ChoiceOutput],
    *,
    chat: bool,
) -> Timeline:
    """Raises BadRequest when a batched engine could never hold the request."""
    completion_tokens = sum(choice.completion_tokens for choice in choices)
    if runtime.engine is not None:
        return _batched(runtime.engine, body, generation, choices, completion_tokens, chat=chat)
    prompt_tokens = sum(generation.prompt_tokens)
    runtime.counters.prompt_tokens += prompt_tokens
    runtime.counters.generation_tokens += completion_tokens
    fixed = usage(prompt_tokens, completion_tokens)
    return Timeline(
        pacer=LinearPacer(),
        first=runtime.timing.first_token_delay_s(prompt_tokens),
        step=runtime.timing.token_delay_s(),
        usage=lambda: fixed,
    )


def _batched(
    engine: BatchedEngine,
    body: dict[str, Any],
    generation: GenerationRequest,
    choices: list[ChoiceOutput],
    completion_tokens: int,
    *,
    chat: bool,
) -> Timeline:
    parts = render_chat(body) if chat else render_completion(generation.prompts)
    prompt = engine.hasher.blocks(generation.model, parts)
    steps = max((len(choice.pieces) for choice in choices), default=1)
    sequence = EngineSequence(prompt, output_tokens=max(1, steps), width=max(1, len(choices)))
    if not engine.scheduler.fits(sequence):
        capacity = engine.cache.capacity_blocks * engine.scheduler.params.block_tokens
        message = (
            f"This engine's KV cache holds {capacity} tokens; the request needs "
            f"{prompt.tokens} prompt tokens plus its output."
        )
        raise BadRequest(message, "messages" if chat else "prompt", code="context_length_exceeded")

    def final_usage() -> Json:
        return usage(sequence.prompt_tokens, completion_tokens, sequence.cached_tokens)

    return Timeline(SequencePacer(engine.scheduler, sequence), 0.0, 1.0, final_usage)

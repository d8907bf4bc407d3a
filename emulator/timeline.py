"""One response's timeline under either cost model: when each decode step is due, and usage."""

from __future__ import annotations

from dataclasses import dataclass

from emulator.content.generation import ChoiceOutput
from emulator.engine.context_window import VisiblePrompt
from emulator.engine.pacing import LinearPacer, Pacer, SequencePacer
from emulator.engine.runtime_state import BatchedEngine, EmulatorRuntime
from emulator.engine.scheduler import EngineSequence
from emulator.provider_cache import CachePiece, CacheUse, ProviderPromptCache
from emulator.request_parsing import BadRequest
from emulator.wire.openai_bodies import Json, usage
from emulator.wire.stream_events import UsageSource


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
    prompt: VisiblePrompt,
    choices: list[ChoiceOutput],
    cache_pieces: tuple[CachePiece, ...] = (),
) -> Timeline:
    """Raises BadRequest when a batched engine could never hold the request.

    Both cost models, and usage, see the prompt after any truncation. A linear engine
    with a provider prompt cache reads and writes it (explicit caching: `cache_pieces`,
    the request's blocks and breakpoints; automatic: the rendered prompt); the tokens
    read are not prefilled again.
    """
    completion_tokens = sum(choice.completion_tokens for choice in choices)
    if runtime.engine is not None:
        timeline = _batched(runtime.engine, prompt, choices, completion_tokens)
        truncated = prompt.render_truncated()
    else:
        use = _cache_use(runtime.prompt_cache, prompt, cache_pieces)
        timeline = _linear(runtime, prompt, completion_tokens, use)
        truncated = prompt.estimate_truncated()
    runtime.injector.counters.truncated_prompts += truncated
    return timeline


def _cache_use(
    cache: ProviderPromptCache | None, prompt: VisiblePrompt, pieces: tuple[CachePiece, ...]
) -> CacheUse:
    if cache is None:
        return CacheUse()
    if cache.options.semantics == "automatic":
        pieces = tuple(CachePiece(part) for part in prompt.parts())
    return cache.use(prompt.generation.model, pieces, prompt.estimated_tokens())


def _linear(
    runtime: EmulatorRuntime, prompt: VisiblePrompt, completion_tokens: int, cache: CacheUse
) -> Timeline:
    prompt_tokens = prompt.estimated_tokens()
    runtime.counters.prompt_tokens += prompt_tokens
    runtime.counters.generation_tokens += completion_tokens
    fixed = usage(prompt_tokens, completion_tokens, cache.read, cache.written)
    return Timeline(
        pacer=LinearPacer(),
        first=runtime.timing.first_token_delay_s(prompt_tokens - cache.read),
        step=runtime.timing.token_delay_s(),
        usage=lambda: fixed,
    )


def _batched(
    engine: BatchedEngine,
    prompt: VisiblePrompt,
    choices: list[ChoiceOutput],
    completion_tokens: int,
) -> Timeline:
    blocks = engine.hasher.blocks(prompt.generation.model, prompt.parts())
    steps = max((len(choice.pieces) for choice in choices), default=1)
    sequence = EngineSequence(blocks, output_tokens=max(1, steps), width=max(1, len(choices)))
    if not engine.scheduler.fits(sequence):
        capacity = engine.cache.capacity_blocks * engine.scheduler.params.block_tokens
        message = (
            f"This engine's KV cache holds {capacity} tokens; the request needs "
            f"{blocks.tokens} prompt tokens plus its output."
        )
        param = "messages" if prompt.chat else "prompt"
        raise BadRequest(message, param, code="context_length_exceeded")

    def final_usage() -> Json:
        return usage(sequence.prompt_tokens, completion_tokens, sequence.cached_tokens)

    return Timeline(SequencePacer(engine.scheduler, sequence), 0.0, 1.0, final_usage)

"""What each choice says: words, JSON or a tool call, cut at stop strings, deterministically."""

from __future__ import annotations

import base64
import math
import random
import secrets
import struct
from dataclasses import dataclass

import orjson

from gateway.emulator.request_parsing import GenerationRequest, ToolSpec
from gateway.emulator.text import (
    choice_seed,
    cut_at_stop,
    example_for_schema,
    generate_tokens,
    seed_from_text,
    split_pieces,
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ChoiceOutput:
    """One choice: its pieces (content tokens or tool-argument fragments), in order."""

    index: int
    pieces: list[str]
    finish_reason: str
    completion_tokens: int
    tool_call: ToolCall | None = None


def generate_choices(request: GenerationRequest) -> list[ChoiceOutput]:
    """``n`` choices per prompt, indexed prompt-major as OpenAI's completions endpoint does."""
    sampling = request.sampling
    outputs: list[ChoiceOutput] = []
    for prompt_index, prompt in enumerate(request.prompts):
        base = sampling.seed if sampling.seed is not None else seed_from_text(prompt)
        for choice in range(sampling.n):
            index = prompt_index * sampling.n + choice
            outputs.append(_one_choice(request, index, choice_seed(base, choice)))
    return outputs


def _one_choice(request: GenerationRequest, index: int, seed: int) -> ChoiceOutput:
    if request.tool is not None:
        return _tool_choice(request.tool, index, request.max_tokens)
    if request.json_schema is not None:
        document = example_for_schema(request.json_schema)
        pieces = split_pieces(orjson.dumps(document if document is not None else {}).decode())
        finish = "stop"
    elif request.json_object:
        words = generate_tokens(seed, max(0, request.max_tokens - 2))
        pieces = ['{"text": "', *words, '"}']
        finish = "stop"
    else:
        pieces = generate_tokens(seed, request.max_tokens)
        finish = "length"
    tokens = len(pieces)
    stopped = cut_at_stop(pieces, request.sampling.stop) if request.sampling.stop else None
    if stopped is not None:
        pieces, tokens = stopped
        finish = "stop"
    return ChoiceOutput(index=index, pieces=pieces, finish_reason=finish, completion_tokens=tokens)


def _tool_choice(tool: ToolSpec, index: int, max_tokens: int) -> ChoiceOutput:
    arguments = example_for_schema(tool.parameters)
    # A function always receives an object, even when its schema is odd or empty.
    text = orjson.dumps(arguments if isinstance(arguments, dict) else {}).decode()
    pieces = split_pieces(text)
    # Benchmarks need exactly max_tokens of decode work: pad with whitespace, which JSON
    # allows after the object, so the arguments still parse.
    pieces += [" "] * max(0, max_tokens - len(pieces))
    return ChoiceOutput(
        index=index,
        pieces=pieces,
        finish_reason="tool_calls",
        completion_tokens=max(1, len(pieces)),
        tool_call=ToolCall(id=f"call_{secrets.token_hex(12)}", name=tool.name),
    )


def embedding_vector(text: str, dimensions: int) -> list[float]:
    """A deterministic unit vector for ``text``."""
    rng = random.Random(seed_from_text(text))
    values = [rng.random() - 0.5 for _ in range(dimensions)]
    norm = math.sqrt(sum(value * value for value in values)) or 1.0
    return [value / norm for value in values]


def encode_base64_floats(values: list[float]) -> str:
    """OpenAI's base64 encoding: little-endian float32, as the official SDK requests by default."""
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()

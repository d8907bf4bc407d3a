"""What each choice says: words, JSON or a tool call, cut at stop strings, deterministically.

How long a text answer or a tool call's text runs is the engine's end-of-sequence draw
(``answer_length.py``): it ends on its own before ``max_tokens``, or runs to exactly
``max_tokens`` when the request or the engine asks for ``ignore_eos``. An ``AnswerStyle``
bends that for faults (loops, a substituted model, broken tool calls) and for a known
answer (needle retrieval, the oracle's answers and tool calls). A request that asks the
model to think gets its thinking first: words of their own, decoded like the answer,
before it.
"""

from __future__ import annotations

import base64
import math
import random
import secrets
import struct
from dataclasses import dataclass, replace
from typing import Any

import orjson

from emulator.content.answer_length import AnswerLengths
from emulator.content.text import (
    TOKENS,
    choice_seed,
    cut_at_stop,
    earliest_stop,
    example_for_schema,
    generate_tokens,
    seed_from_text,
    split_pieces,
)
from emulator.content.tool_faults import ToolFault, corrupt_tool_call
from emulator.request_parsing import GenerationRequest, ToolSpec

# Another model behind the same name: its text comes from differently salted seeds and
# its logprobs from a differently salted table.
SUBSTITUTE_SALT = b"substitute-model:"
_SUBSTITUTE_SEED = 0x5DEECE66D_2545F491
_THINKING_SEED = 0x7468_696E_6B69_6E67  # "thinking": other words than the answer's
_LOOP_PHRASE_TOKENS = 3


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ChoiceOutput:
    """One choice: its pieces (content tokens or tool-argument fragments), in order.

    The first ``thinking_pieces`` pieces are thinking, the rest the answer; both count
    in ``completion_tokens``. ``stop_sequence`` is the stop string that ended the answer.
    ``logprob_salt`` selects the logprob table of the model that wrote it.
    """

    index: int
    pieces: list[str]
    finish_reason: str
    completion_tokens: int
    tool_call: ToolCall | None = None
    logprob_salt: bytes = b""
    thinking_pieces: int = 0
    stop_sequence: str | None = None

    @property
    def thinking(self) -> list[str]:
        return self.pieces[: self.thinking_pieces]

    @property
    def answer(self) -> list[str]:
        return self.pieces[self.thinking_pieces :]


@dataclass(frozen=True, slots=True)
class KnownCall:
    """A tool call decided before generation: the function and its arguments."""

    tool: ToolSpec
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AnswerStyle:
    """How the engine answers, beyond what the request asks: faults, and a known answer."""

    answer: str | None = None  # replaces generated text (needle retrieval, the oracle)
    loop: bool = False
    substitute: bool = False
    tool_fault: ToolFault | None = None
    call: KnownCall | None = None  # replaces the schema's example call (the oracle)


HEALTHY = AnswerStyle()


def generate_choices(
    request: GenerationRequest, lengths: AnswerLengths, style: AnswerStyle = HEALTHY
) -> list[ChoiceOutput]:
    """``n`` choices per prompt, indexed prompt-major as OpenAI's completions endpoint does;
    ``lengths`` is the engine's end-of-sequence draw."""
    sampling, draw = request.sampling, _Draw(lengths, style)
    outputs: list[ChoiceOutput] = []
    for prompt_index, prompt in enumerate(request.prompts):
        base = sampling.seed if sampling.seed is not None else seed_from_text(prompt)
        for choice in range(sampling.n):
            index = prompt_index * sampling.n + choice
            outputs.append(_one_choice(request, index, choice_seed(base, choice), draw))
    return outputs


@dataclass(frozen=True, slots=True)
class _Draw:
    """What decides a choice beyond its request: the length draw and the answer's style."""

    lengths: AnswerLengths
    style: AnswerStyle


def _one_choice(request: GenerationRequest, index: int, seed: int, draw: _Draw) -> ChoiceOutput:
    style = draw.style
    answer = _answer(request, index, seed, draw)
    if not request.thinking_tokens:
        return answer
    thinking = _words(seed ^ _THINKING_SEED, request.thinking_tokens, style.substitute)
    return replace(
        answer,
        pieces=thinking + answer.pieces,
        completion_tokens=len(thinking) + answer.completion_tokens,
        thinking_pieces=len(thinking),
    )


def _answer(request: GenerationRequest, index: int, seed: int, draw: _Draw) -> ChoiceOutput:
    style = draw.style
    if request.tool is not None:
        padded_to = request.max_tokens if _exact(request, draw.lengths) else 0
        call = style.call or _example_call(request.tool)
        return _tool_choice(call, index, padded_to, style.tool_fault)
    pieces, finish = _content(request, seed, draw)
    tokens = len(pieces)
    stops = request.sampling.stop
    stopped = cut_at_stop(pieces, stops) if stops else None
    matched = None
    if stopped is not None:
        matched = earliest_stop("".join(pieces), stops)
        pieces, tokens = stopped
        finish = "stop"
    salt = SUBSTITUTE_SALT if style.substitute else b""
    return ChoiceOutput(index, pieces, finish, tokens, logprob_salt=salt, stop_sequence=matched)


def _exact(request: GenerationRequest, lengths: AnswerLengths) -> bool:
    return request.ignore_eos or lengths.ignore_eos


def _content(request: GenerationRequest, seed: int, draw: _Draw) -> tuple[list[str], str]:
    """A text answer's pieces and finish reason, before stop strings."""
    max_tokens, style = request.max_tokens, draw.style
    if style.loop:
        phrase = _words(seed, _LOOP_PHRASE_TOKENS, style.substitute)
        return (phrase * (max_tokens // len(phrase) + 1))[:max_tokens], "length"
    if style.answer is not None:
        pieces = split_pieces(style.answer)
        return (pieces, "stop") if len(pieces) <= max_tokens else (pieces[:max_tokens], "length")
    if request.json_schema is not None:
        document = example_for_schema(request.json_schema)
        return split_pieces(orjson.dumps(document if document is not None else {}).decode()), "stop"
    length = draw.lengths.draw(
        seed, max_tokens, min_tokens=request.min_tokens, ignore_eos=request.ignore_eos
    )
    if request.json_object:
        words = _words(seed, max(0, length.tokens - 2), style.substitute)
        return ['{"text": "', *words, '"}'], "stop"
    return _words(seed, length.tokens, style.substitute), length.finish_reason


def _words(seed: int, count: int, substitute: bool) -> list[str]:
    healthy = generate_tokens(seed, count)
    if not substitute:
        return healthy
    other = generate_tokens(seed ^ _SUBSTITUTE_SEED, count)
    # Where the two models would agree, the substitute takes the next word instead: a
    # one-token canary then tells them apart for every prompt, not for most.
    pairs = zip(other, healthy, strict=True)
    return [_next_token(word) if word == same else word for word, same in pairs]


def _next_token(token: str) -> str:
    return TOKENS[(TOKENS.index(token) + 1) % len(TOKENS)]


def _example_call(tool: ToolSpec) -> KnownCall:
    arguments = example_for_schema(tool.parameters)
    # A function always receives an object, even when its schema is odd or empty.
    return KnownCall(tool, arguments if isinstance(arguments, dict) else {})


def _tool_choice(
    call: KnownCall, index: int, padded_to: int, fault: ToolFault | None
) -> ChoiceOutput:
    name, text = call.tool.name, orjson.dumps(call.arguments).decode()
    if fault is not None:
        name, text = corrupt_tool_call(call.tool, call.arguments, fault)
    pieces = split_pieces(text)
    # An exact length (ignore_eos) is max_tokens of decode work: pad with whitespace,
    # which JSON allows after the object, so the arguments still parse.
    pieces += [" "] * max(0, padded_to - len(pieces))
    return ChoiceOutput(
        index=index,
        pieces=pieces,
        finish_reason="tool_calls",
        completion_tokens=max(1, len(pieces)),
        tool_call=ToolCall(id=f"call_{secrets.token_hex(12)}", name=name),
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

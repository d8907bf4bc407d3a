"""What a wire format of the emulator is: a front door to the one engine behind all of them.

A format reads its requests into the engine's terms (an ``EngineCall``: what to generate,
and the prompt in the engine's chat form, which the KV cache and needle retrieval read)
and writes the engine's answer, its errors and its rate-limit headers back in its own
shape. Everything between (faults, the scheduler, the KV cache, timing) is the same for
every format: ``inference_path.py`` runs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from emulator.content.generation import ChoiceOutput
from emulator.provider_cache import CachePiece
from emulator.rate_limits import RateState
from emulator.request_parsing import BadRequest, GenerationRequest
from emulator.wire.stream_events import StepEvent, UsageSource

Json = dict[str, Any]
Headers = list[tuple[bytes, bytes]]

JSON_HEADERS: Headers = [(b"content-type", b"application/json")]
SSE_HEADERS: Headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


@dataclass(frozen=True, slots=True)
class Inbound:
    """What a format reads of one request: its JSON body, path parameters, query and
    headers (names in lower case)."""

    body: Json
    path: Mapping[str, str]
    query: Mapping[str, str]
    headers: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Failure:
    """An error to answer with, before or instead of generating."""

    status: int
    message: str
    param: str | None = None
    code: str | None = None
    retry_after_s: float | None = None

    @classmethod
    def of(cls, error: BadRequest) -> Failure:
        return cls(error.status, error.message, error.param, error.code)


@dataclass(frozen=True, slots=True)
class ErrorReply:
    body: bytes
    headers: Headers


@dataclass(frozen=True, slots=True)
class TokenCounts:
    """The engine's usage: prompt tokens (cached ones included), completion, cached."""

    prompt: int
    completion: int
    cached: int
    written: int = 0
    """Written to a provider prompt cache (explicit caching bills them apart)."""

    @classmethod
    def of(cls, usage: Json) -> TokenCounts:
        details = usage.get("prompt_tokens_details") or {}
        written = details.get("cache_write_tokens", 0)
        return cls(
            usage["prompt_tokens"], usage["completion_tokens"], details["cached_tokens"], written
        )


class AnswerWriter(Protocol):
    """Writes one request's answer in its format, whole or as timed stream events."""

    def body(self, choices: Sequence[ChoiceOutput], usage: Json) -> bytes: ...

    def events(self, choices: Sequence[ChoiceOutput], usage: UsageSource) -> list[StepEvent]:
        """Every event of the stream; the last one ends it, so a faulty stream never
        sends it. ``usage`` may be asked for only when an event is due."""
        ...

    def error_event(self, message: str) -> bytes:
        """The event that ends a stream failing mid-way (``error_event_after_chunks``)."""
        ...


@dataclass(frozen=True, slots=True)
class ClientHeaders:
    """The API version and beta features a client asked for (Anthropic's headers)."""

    version: str
    betas: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EngineCall:
    """A request in the engine's terms; ``prompt`` is the chat form (``messages`` with
    role, text and ``tool_calls``; ``tools`` as functions with JSON schemas)."""

    generation: GenerationRequest
    prompt: Json
    writer: AnswerWriter
    chat: bool = True  # False: a text completion's prompts
    cache_pieces: tuple[CachePiece, ...] = ()
    """The prompt's content blocks with their cache breakpoints, for a provider prompt
    cache with explicit semantics (Anthropic's format fills it when a block is marked)."""
    client: ClientHeaders | None = None
    """Anthropic's version and beta headers, which the engine's stats record."""

    @property
    def requested_tokens(self) -> int:
        """What a rate limit charges: the prompt and the most the answer may take."""
        generation = self.generation
        outputs = len(generation.prompts) * generation.sampling.n
        answer = generation.max_tokens + generation.thinking_tokens
        return sum(generation.prompt_tokens) + outputs * answer


class ApiFormat(Protocol):
    """One wire format's requests, answers and errors."""

    def refusal(
        self, headers: Mapping[str, str], query: Mapping[str, str], api_key: str | None
    ) -> Failure | None:
        """Why the request is refused before it is read (a wrong or missing key when
        ``api_key`` is set, a missing required header), or None."""
        ...

    def read(self, inbound: Inbound) -> EngineCall:
        """The request in the engine's terms; raises BadRequest."""
        ...

    def error(self, failure: Failure) -> ErrorReply: ...

    def rate_headers(self, state: RateState) -> Headers:
        """The headers that report the rate limits' budgets (none without limits)."""
        ...

"""Settings of the emulated engine: start-up knobs (frozen) and faults (replaceable at runtime)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from emulator.provider_cache import PromptCacheOptions

Rate = Annotated[float, Field(ge=0, le=1)]


class Faults(BaseModel):
    """Failure injection for tests; replaced wholesale by ``PUT /emulator/faults``.

    Faults apply to inference endpoints only (chat, completions, embeddings), so that
    health checks and the control endpoints keep working while an engine "fails". The
    rates (probabilities per request) draw from one random generator per engine, seeded
    by ``seed`` and re-seeded whenever the faults are replaced, so a test replays exactly.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    fail_status: int | None = Field(
        None, ge=400, le=599, description="Answer with this status and an OpenAI error body."
    )
    fail_count: int = Field(
        -1, ge=-1, description="How many upcoming requests fail with fail_status; -1 = all."
    )
    retry_after_s: float | None = Field(
        None, ge=0, description="Sent as Retry-After on injected failures."
    )
    stall_before_first_byte_s: float = Field(
        0.0, ge=0, description="Sleep before sending any response bytes, headers included."
    )
    cut_stream_after_chunks: int | None = Field(
        None, ge=0, description="Streams: drop the connection after this many data chunks."
    )
    error_event_after_chunks: int | None = Field(
        None, ge=0, description="Streams: after this many data chunks send an error event, end."
    )
    stall_mid_stream_after_chunks: int | None = Field(
        None, ge=1, description="Streams: after this many data chunks, wait stall_mid_stream_s."
    )
    stall_mid_stream_s: float = Field(
        0.0, ge=0, description="Length of the mid-stream stall (not scaled), then the rest."
    )
    omit_done: bool = Field(
        False,
        description="Streams: end cleanly without the event that closes the stream "
        "(OpenAI's [DONE], Anthropic's message_stop, Gemini's last chunk).",
    )
    malformed_body: bool = Field(
        False, description="Whole answers: a 200 whose JSON body is cut in half."
    )
    flap_requests: int | None = Field(
        None,
        ge=1,
        description="Flap: this many requests fail with flap_status, then this many are "
        "served, and so on, starting with failures.",
    )
    flap_status: int = Field(503, ge=400, le=599, description="Status of a flap's failures.")
    seed: int | None = Field(
        None, description="Seeds the random draws of the rates; unset: unseeded."
    )
    echo_request_headers: bool = Field(
        False,
        description="Refusals and injected failures quote the request's headers (its key "
        "among them) in their message, as a careless upstream or proxy does: for tests "
        "that no secret leaks.",
    )
    cut_stream_rate: Rate | None = Field(
        None,
        description="Streams: share of streams cut after cut_stream_after_chunks chunks "
        "(1 if unset); null: cut_stream_after_chunks alone cuts every stream.",
    )
    malformed_tool_call_rate: Rate = Field(
        0.0,
        description="Share of tool calls corrupted: arguments not JSON, an undeclared "
        "tool name, or arguments against the tool's schema.",
    )
    loop_rate: Rate = Field(
        0.0, description="Share of text answers that repeat a short phrase up to max_tokens."
    )
    truncate_context_tokens: int | None = Field(
        None, ge=1, description="Silently keep only the last N prompt tokens; usage counts those."
    )
    substitute_model: bool = Field(
        False, description="Serve another model under the same name: other text and logprobs."
    )
    latency_spike_rate: Rate = Field(
        0.0, description="Share of requests that wait latency_spike_s before the first byte."
    )
    latency_spike_s: float = Field(
        1.0, ge=0, description="Length of a latency spike, multiplied by the time scale."
    )
    error_burst_rate: Rate = Field(
        0.0, description="Share of requests that start a burst of error_burst_length failures."
    )
    error_burst_length: int = Field(
        5, ge=1, description="Requests failed by one burst, the one that starts it included."
    )
    error_burst_status: int = Field(
        503, ge=400, le=599, description="Status of the requests failed by a burst."
    )


class EmulatorOptions(BaseModel):
    """How the emulated engine behaves, whatever models it serves; the one source of its
    defaults (a gateway backend's `emulator:` block is this model).

    ``cost_model="linear"`` (the default) uses the delays in ``engine/timing.py``; ``"batched"``
    runs a continuous-batching scheduler over a prefix-caching KV cache (``engine/scheduler.py``)
    and ignores ``token_delay_ms``, ``base_latency_ms`` and ``prefill_ms_per_1k_tokens``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    token_delay_ms: float = Field(5.0, ge=0, description="Delay between output tokens.")
    base_latency_ms: float = Field(0.0, ge=0, description="Fixed part of time to first token.")
    prefill_ms_per_1k_tokens: float = Field(
        0.0, ge=0, description="Prompt-proportional part of time to first token."
    )
    time_scale: float = Field(
        1.0, ge=0, description="Multiplies every delay: 0.1 runs ten times faster, 0 never sleeps."
    )
    embedding_dim: int = Field(64, ge=1, le=16384)
    faults: Faults = Field(default_factory=Faults)
    cost_model: Literal["linear", "batched"] = Field(
        "linear", description="linear: fixed delays; batched: KV cache and continuous batching."
    )
    kv_capacity_tokens: int = Field(
        100_000, ge=1, description="Batched: KV cache size; running sequences and cached blocks."
    )
    block_tokens: int = Field(16, ge=1, le=4096, description="Batched: tokens per KV block.")
    bytes_per_token: float = Field(
        4.0, gt=0, le=64, description="Batched: prompt bytes per estimated token."
    )
    prefill_tokens_per_s: float = Field(
        10_000.0, gt=0, description="Batched: prompt tokens computed per second of a step."
    )
    decode_base_ms: float = Field(
        8.0, ge=0, description="Batched: fixed cost of a step that decodes anything."
    )
    decode_per_seq_ms: float = Field(
        0.15, ge=0, description="Batched: extra step cost per decoding sequence."
    )
    max_batched_tokens: int = Field(
        4096, ge=1, description="Batched: prompt tokens prefilled per step, at most."
    )
    max_num_seqs: int = Field(256, ge=1, description="Batched: sequences running at once.")
    rate_limit_requests_per_minute: int | None = Field(
        None,
        ge=1,
        description="Inference requests admitted per minute (a bucket refilled continuously); "
        "beyond it: 429 with Retry-After. Null: no limit.",
    )
    prompt_cache: PromptCacheOptions | None = Field(
        None,
        description="Linear: a cloud provider's prompt cache (provider_cache.py), automatic "
        "(OpenAI, DeepSeek) or explicit (Anthropic's cache_control); null: none.",
    )
    rate_limit_tokens_per_minute: int | None = Field(
        None,
        ge=1,
        description="Prompt plus maximum output tokens admitted per minute; beyond it: 429 "
        "with Retry-After. Null: no limit.",
    )
    output_tokens_mean: float = Field(
        200.0,
        gt=0,
        description="Mean length of an answer that ends on its own (a lognormal draw per "
        "choice, seeded like its words); max_tokens caps it.",
    )
    output_tokens_sigma: float = Field(
        1.0,
        ge=0,
        le=3,
        description="Spread of that draw (the sigma of the length's logarithm); 0: every "
        "answer is the mean, below max_tokens.",
    )
    ignore_eos: bool = Field(
        False,
        description="Every answer runs to exactly max_tokens, as if each request asked "
        "vLLM's ignore_eos: for benchmarks whose figures need fixed output lengths.",
    )
    answers: Literal["filler", "oracle"] = Field(
        "filler",
        description="filler: deterministic words, tool calls and JSON from the schema's "
        "examples. oracle: a stand-in for a strong model on checkable work: JSON and tool "
        "arguments that validate and carry the values the prompt states, the tool the "
        "user names, right answers to arithmetic and code look-ups; else filler "
        "(emulator/content/oracle.py).",
    )

    @model_validator(mode="after")
    def _check_kv_capacity(self) -> Self:
        if self.kv_capacity_tokens < self.block_tokens:
            raise ValueError("kv_capacity_tokens must hold at least one block (block_tokens)")
        if self.block_tokens * self.bytes_per_token < 1:
            raise ValueError("block_tokens * bytes_per_token must be at least one byte")
        return self


class EmulatorSettings(EmulatorOptions):
    """Everything an emulated engine is started with: its options and the models it serves."""

    models: list[str] = Field(default_factory=lambda: ["emulated-model"], min_length=1)
    api_key: str | None = Field(
        None,
        min_length=1,
        repr=False,
        description="The key clients must present (Authorization: Bearer, x-api-key or "
        "x-goog-api-key, by format); null: any key or none.",
    )

    @classmethod
    def serving(cls, models: Sequence[str], options: EmulatorOptions | None = None) -> Self:
        """`options` (defaults when None) for an engine that serves `models`."""
        chosen = options.model_dump() if options is not None else {}
        return cls(models=list(models), **chosen)

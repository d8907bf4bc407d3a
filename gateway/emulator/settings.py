"""Settings of the emulated engine: start-up knobs (frozen) and faults (replaceable at runtime)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Faults(BaseModel):
    """Failure injection for tests; replaced wholesale by ``PUT /emulator/faults``.

    Faults apply to inference endpoints only (chat, completions, embeddings), so that
    health checks and the control endpoints keep working while an engine "fails".
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


class EmulatorSettings(BaseModel):
    """How the emulated engine behaves; see ``timing.py`` for how the delays combine."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: list[str] = Field(default_factory=lambda: ["emulated-model"], min_length=1)
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

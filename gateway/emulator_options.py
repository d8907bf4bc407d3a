"""Settings of an in-process emulated engine, as a backend's `emulator:` block declares them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmulatorOptions(_Strict):
    """An in-process emulated engine (kind: emulated); names match the emulator's settings.

    `linear`: fixed delays. `batched`: a KV cache and continuous batching, where prefill
    costs uncached prompt tokens and decode steps slow down as the batch grows.
    """

    cost_model: Literal["linear", "batched"] = "linear"
    token_delay_ms: float = Field(5.0, ge=0, description="linear: delay between tokens.")
    base_latency_ms: float = Field(0.0, ge=0, description="linear: fixed part of TTFT.")
    prefill_ms_per_1k_tokens: float = Field(0.0, ge=0, description="linear: prompt part of TTFT.")
    kv_capacity_tokens: int = Field(100_000, ge=1, description="batched: KV cache size.")
    prefill_tokens_per_s: float = Field(10_000.0, gt=0, description="batched: prefill speed.")
    decode_base_ms: float = Field(8.0, ge=0, description="batched: decode step, fixed part.")
    decode_per_seq_ms: float = Field(0.15, ge=0, description="batched: step cost per sequence.")
    max_batched_tokens: int = Field(4096, ge=1, description="batched: prefill chunk per step.")
    max_num_seqs: int = Field(256, ge=1, description="batched: most sequences in a batch.")
    time_scale: float = Field(1.0, ge=0, description="Multiplies every delay; 0 never sleeps.")

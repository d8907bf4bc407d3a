"""Engine counters and their exposition: Prometheus text with vLLM's names, and a flat dict."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class EngineCounters:
    """Totals since start; token counts are per request, cache counts in prompt tokens."""

    prompt_tokens: int = 0
    generation_tokens: int = 0
    prefix_cache_queries: int = 0
    prefix_cache_hits: int = 0
    steps: int = 0
    prefill_busy_s: float = 0.0  # time in steps that prefilled anything: utilisation
    step_busy_s: float = 0.0  # time in any step
    kv_held_s: float = 0.0  # ∫ share of KV held by running sequences dt: / wall = mean held
    evicted_blocks: int = 0


@dataclass(frozen=True, slots=True)
class EngineSnapshot:
    """What one engine reports at one moment."""

    model_name: str
    running: int
    waiting: int
    kv_usage: float  # 0..1 of capacity used: running sequences' blocks and cached ones
    kv_held: float  # 0..1 of capacity held by running sequences: vLLM's meaning of usage
    counters: EngineCounters

    def as_stats(self) -> dict[str, float]:
        """Flat numbers for ``GET /emulator/stats``."""
        counters = self.counters
        return {
            "requests_running": self.running,
            "requests_waiting": self.waiting,
            "kv_cache_usage": self.kv_usage,
            "kv_cache_held": self.kv_held,
            "prompt_tokens_total": counters.prompt_tokens,
            "generation_tokens_total": counters.generation_tokens,
            "prefix_cache_queries_total": counters.prefix_cache_queries,
            "prefix_cache_hits_total": counters.prefix_cache_hits,
            "kv_evicted_blocks_total": counters.evicted_blocks,
            "steps_total": counters.steps,
            "prefill_busy_s": counters.prefill_busy_s,
            "step_busy_s": counters.step_busy_s,
            "kv_held_s": counters.kv_held_s,
        }


# (name, type, help, stats key); vLLM's names where vLLM has the number.
_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("vllm:num_requests_running", "gauge", "Requests in the batch.", "requests_running"),
    ("vllm:num_requests_waiting", "gauge", "Requests waiting for admission.", "requests_waiting"),
    (
        "vllm:gpu_cache_usage_perc",
        "gauge",
        "KV cache held by running sequences (not evictable), 1 = full: vLLM's meaning.",
        "kv_cache_held",
    ),
    (
        "emulator:kv_cache_usage_perc",
        "gauge",
        "KV cache used by running sequences and cached prefixes, 1 = full.",
        "kv_cache_usage",
    ),
    (
        "vllm:prefix_cache_queries_total",
        "counter",
        "Prompt tokens looked up in the prefix cache.",
        "prefix_cache_queries_total",
    ),
    (
        "vllm:prefix_cache_hits_total",
        "counter",
        "Prompt tokens found in the prefix cache.",
        "prefix_cache_hits_total",
    ),
    ("vllm:prompt_tokens_total", "counter", "Prompt tokens processed.", "prompt_tokens_total"),
    (
        "vllm:generation_tokens_total",
        "counter",
        "Tokens generated.",
        "generation_tokens_total",
    ),
    (
        "emulator:kv_evicted_blocks_total",
        "counter",
        "Cached blocks evicted to make room.",
        "kv_evicted_blocks_total",
    ),
    ("emulator:steps_total", "counter", "Scheduler steps run.", "steps_total"),
    (
        "emulator:prefill_busy_seconds_total",
        "counter",
        "Time in steps that prefilled.",
        "prefill_busy_s",
    ),
    ("emulator:step_busy_seconds_total", "counter", "Time in any step.", "step_busy_s"),
    (
        "emulator:kv_held_seconds_total",
        "counter",
        "Time-integral of the KV share held by running sequences (1 s at 100 %).",
        "kv_held_s",
    ),
)


def prometheus_text(snapshot: EngineSnapshot) -> str:
    """Prometheus text exposition (version 0.0.4) of one engine."""
    stats = snapshot.as_stats()
    labels = f'{{model_name="{_escape(snapshot.model_name)}"}}'
    lines: list[str] = []
    for name, kind, help_text, key in _METRICS:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.append(f"{name}{labels} {_number(stats[key])}")
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

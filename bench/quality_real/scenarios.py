"""The cases measured: healthy twins, the faults providers introduce, and benign setting
changes that a threshold should let pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bench.quality_real.replicas import EngineSetup

Role = Literal["twins", "fault", "benign"]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    label: str
    """What the subject replica does differently, in words (the table's first column)."""
    role: Role
    setup: EngineSetup
    """The subject's setup; the reference replica always runs the default one."""
    needle: bool = False
    """Run the long-context probe too (slow on one CPU thread: seconds per probe)."""


TWINS = Scenario("twins", "identical twin (same GGUF, same settings)", "twins", EngineSetup(), True)
SCENARIOS: tuple[Scenario, ...] = (
    TWINS,
    Scenario(
        "kv-q4_0",
        "KV cache q4_0 (K and V; flash attention auto, so on)",
        "fault",
        EngineSetup(cache_type_k="q4_0", cache_type_v="q4_0"),
    ),
    Scenario("kv-k-q4_0", "K cache q4_0 only (V f16)", "fault", EngineSetup(cache_type_k="q4_0")),
    Scenario(
        "template-llama2",
        "wrong chat template: built-in llama2 (no Jinja)",
        "fault",
        EngineSetup(chat_template="llama2", jinja=False),
    ),
    Scenario(
        "template-name-jinja",
        "a template name given with Jinja on: llama.cpp renders the name itself as the prompt",
        "fault",
        EngineSetup(chat_template="llama2"),
    ),
    Scenario(
        "template-builtin",
        "GGUF's template read as built-in chatml (no Jinja): no default system prompt",
        "fault",
        EngineSetup(jinja=False),
    ),
    Scenario(
        "ctx-1024",
        "context window cut to 1,024 tokens",
        "fault",
        EngineSetup(ctx_size=1024),
        needle=True,
    ),
    Scenario(
        "kv-q8_0",
        "KV cache q8_0 (K and V): near-lossless, not a fault",
        "benign",
        EngineSetup(cache_type_k="q8_0", cache_type_v="q8_0"),
    ),
    Scenario(
        "flash-attn-off",
        "flash attention off: another kernel, not a fault",
        "benign",
        EngineSetup(flash_attn="off"),
    ),
    Scenario(
        "threads-2",
        "two CPU threads: another summation order, not a fault",
        "benign",
        EngineSetup(threads=2),
    ),
)


def by_names(names: str) -> list[Scenario]:
    """The scenarios named (comma-separated), twins first: the others are judged against them."""
    wanted = {n.strip() for n in names.split(",") if n.strip()}
    unknown = wanted - {s.name for s in SCENARIOS}
    if unknown:
        raise ValueError(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return [s for s in SCENARIOS if s.name in wanted]
